// Servers side by side in ONE process, measured in interleaved rounds: the no-sharing
// load (every worker pages through its own company's list, following the server's own
// endCursor) against each target in turn, round after round, so a machine whose speed
// drifts by minutes (a shared host: 2x between runs of bench/hotpath.cjs) slows every
// target alike. It prints each target's CPU per request (emulator, server and client:
// one process) and, the figure to quote, the median over rounds of each target's CPU
// against the first target's in the same round.
//
//   npm run build && npx tsc -p tsconfig.bench.json
//   taskset -c 0 node_modules/.bin/node --max-semi-space-size=8 bench/interleaved.cjs apollo subgraph
//   ... bench/interleaved.cjs subgraph subgraph@/path/to/other/dist     # two builds of the subgraph
//   ... bench/interleaved.cjs floor:proxy apollo subgraph               # floor:graphql and floor:proxy too
//
// Settings (environment): COMPANIES (50, also the requests in flight: one worker per
// company), PAGES (5 pages of 100 locations per company), ROUNDS (7), PER_ROUND (2,000
// requests per target and round), LATENCY (the emulator's delay per response in ms, 0),
// FRESHNESS (the subgraph's WFS_FRESHNESS_SECONDS, none: e.g. FRESHNESS=5 PAGES=2, and
// after the first round every request is answered from kept pages).
// A target is `subgraph`, `apollo` or `floor:<mode>`, optionally `@<dist folder>` (default
// this checkout's dist/); the emulator comes from the first target's build.
'use strict';
const path = require('node:path');
const { startTarget } = require('./inProcess.cjs');
const { Agent, request } = require('undici');

const COMPANIES = Number(process.env.COMPANIES) || 50;
const PAGES = Number(process.env.PAGES) || 5;
const ROUNDS = Number(process.env.ROUNDS) || 7;
const PER_ROUND = Number(process.env.PER_ROUND) || 2_000;
const LATENCY = Number(process.env.LATENCY) || 0;
const QUERY = 'query BenchPages($after: String) { locations(first: 100, after: $after) { nodes { id name } pageInfo { hasNextPage endCursor } } }';
const here = path.join(__dirname, '..', 'dist');

const specs = (process.argv.length > 2 ? process.argv.slice(2) : ['apollo', 'subgraph']).map((arg) => {
  const [target, dist] = arg.split('@');
  return { name: arg, target, dist: path.resolve(dist ?? here) };
});

(async () => {
  const { makeTenant, startEmulator } = require(path.join(specs[0].dist, 'emulator'));
  const tenants = Array.from({ length: COMPANIES }, (_, i) => {
    const n = String(i + 1).padStart(12, '0');
    return makeTenant({ tenantId: `be0c0000-0000-4000-8000-${n}`, clientId: `c${i}`, clientSecret: `s${i}-abcdefgh`, grantedScopes: ['shifts.read'], shard: i % 2, locationCount: 100 * PAGES, shiftCount: 10 });
  });
  process.env.NODE_ENV = 'production';
  const emulator = await startEmulator({ tenants, latencyMs: LATENCY });
  const targets = [];
  for (const spec of specs) targets.push({ ...spec, server: await startTarget({ dist: spec.dist, tenants, emulator, target: spec.target }), perRound: [] });
  const agent = new Agent({ connections: COMPANIES * targets.length });

  /** Sends `count` requests to `server`, one worker per company, each walking its list by the answers' endCursor. */
  const run = async (target, count) => {
    let sent = 0;
    target.after ??= new Array(COMPANIES).fill(null);
    await Promise.all(tenants.map(async (tenant, worker) => {
      const headers = { 'content-type': 'application/json', 'x-tenant-id': tenant.tenantId };
      while (sent++ < count) {
        const body = JSON.stringify({ query: QUERY, variables: { after: target.after[worker] } });
        const response = await request(target.server.url, { method: 'POST', headers, body, dispatcher: agent });
        const text = await response.body.text();
        if (response.statusCode !== 200 || text.includes('"errors"')) throw new Error(`${target.name}: ${text.slice(0, 300)}`);
        const { pageInfo } = JSON.parse(text).data.locations;
        target.after[worker] = pageInfo.hasNextPage ? pageInfo.endCursor : null;
      }
    }));
  };

  for (const target of targets) await run(target, PER_ROUND);
  for (let round = 0; round < ROUNDS; round++) {
    for (const target of targets) {
      const before = process.cpuUsage();
      await run(target, PER_ROUND);
      const used = process.cpuUsage(before);
      target.perRound.push((used.user + used.system) / 1000 / PER_ROUND);
    }
  }
  const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1];
  const first = targets[0];
  process.stdout.write(`${COMPANIES} companies in flight, ${PAGES} pages each, ${ROUNDS} rounds x ${PER_ROUND} requests per target, latency ${LATENCY} ms\n`);
  for (const target of targets) {
    const ratios = target.perRound.map((cpu, round) => cpu / first.perRound[round]);
    process.stdout.write(
      `${target.name.padEnd(24)} cpu ms/req median ${median(target.perRound).toFixed(3)} (min ${Math.min(...target.perRound).toFixed(3)})` +
        (target === first ? '\n' : `  x${first.name}: median ${median(ratios).toFixed(3)} (${ratios.map((r) => r.toFixed(2)).join(' ')})\n`),
    );
  }
  await agent.close();
  for (const target of targets) await (target.server.close ?? target.server.stop).call(target.server);
  await emulator.close();
  process.exit(0);
})().catch((error) => {
  process.stderr.write(`${error.stack ?? error}\n`);
  process.exit(1);
});
