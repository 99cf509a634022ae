// The in-process harness of bench/README.md ("What each step bought"): the emulator
// (0 ms latency unless LATENCY says), the server and an undici client in ONE process, so the CPU time per
// request it prints moves far less between runs than `npm run bench` on a shared machine.
//
//   npm run build && npx tsc -p tsconfig.bench.json
//   taskset -c 0 node_modules/.bin/node bench/hotpath.cjs            # the subgraph
//   TRACE=1 taskset -c 0 node_modules/.bin/node bench/hotpath.cjs    # every request asks for ftv1
//   TRACE_EVERY=100 taskset -c 0 node_modules/.bin/node bench/hotpath.cjs   # 1 request in 100 asks for ftv1 (a router's 1 % sampling)
//   APOLLO=1 taskset -c 0 node_modules/.bin/node bench/hotpath.cjs   # the bench's `apollo` target (the naive server made lean)
//   FLOOR=graphql taskset -c 0 node_modules/.bin/node bench/hotpath.cjs   # the floor (or FLOOR=proxy)
//   Q='{ shifts(first: 100) { nodes { id location { name } } } }' ...     # another query
//   IN_FLIGHT=1 ...                                                  # requests in flight (default 10)
//   LATENCY=20 IN_FLIGHT=50 ...                                      # the emulator's delay per response in ms (default 0), as in `npm run bench`
//   ... node --max-semi-space-size=8 --max-old-space-size=256 --trace-gc-nvp bench/hotpath.cjs   # the deployed flags, one line per
//                                                                    # collection (promoted=, pause=): what "Garbage the no-sharing
//                                                                    # row was paying for" in bench/README.md was found with
//   PAGED=50 taskset -c 0 node_modules/.bin/node bench/hotpath.cjs   # no sharing: `npm run bench`'s no-sharing query over
//                                                                    # 50 pages, consecutive requests on different pages
//
// An argument names another build's dist/ folder (default: this checkout's). It loads
// tsc's single modules (dist/server.js …), the same code the bundle holds.
'use strict';
const path = require('node:path');
const { startInProcess, targetFromEnv } = require('./inProcess.cjs');

const dist = path.resolve(process.argv[2] ?? path.join(__dirname, '..', 'dist'));
const LAT = Number(process.env.LATENCY) || 0;
const { makeTenant } = require(path.join(dist, 'emulator'));
const { Agent, request } = require('undici');

const IN_FLIGHT = Number(process.env.IN_FLIGHT) || 10;
const WARMUP = 3_000;
const PER_ROUND = 3_000;
const ROUNDS = 5;

(async () => {
  const tenant = makeTenant({ tenantId: 'be0c0000-0000-4000-8000-000000000001', clientId: 'c1', clientSecret: 's1-abcdefgh', grantedScopes: ['shifts.read'], shard: 0, locationCount: Math.max(200, 100 * (Number(process.env.PAGED) || 0)), shiftCount: 500 });
  const { server, close } = await startInProcess({ dist, tenants: [tenant], latencyMs: LAT, target: targetFromEnv() });
  const agent = new Agent({ connections: IN_FLIGHT });
  const paged = Number(process.env.PAGED) || 0;
  const PAGES_QUERY = 'query BenchPages($after: String) { locations(first: 100, after: $after) { nodes { id name } pageInfo { hasNextPage endCursor } } }';
  const body = JSON.stringify({ query: process.env.Q || 'query BenchLocations { locations(first: 100) { nodes { id name } } }' });
  const pageBodies = [];
  const headers = { 'content-type': 'application/json', 'x-tenant-id': tenant.tenantId, ...(process.env.TRACE && { 'apollo-federation-include-trace': 'ftv1' }) };
  const traceEvery = Number(process.env.TRACE_EVERY) || 0;
  let sentSoFar = 0;
  let pagesSent = 0;
  const one = async (extra = {}) => {
    const sampled = traceEvery > 0 && ++sentSoFar % traceEvery === 0 ? { 'apollo-federation-include-trace': 'ftv1' } : {};
    const sent = paged ? pageBodies[pagesSent++ % pageBodies.length] : body;
    const response = await request(server.url, { method: 'POST', headers: { ...headers, ...sampled, ...extra }, body: sent, dispatcher: agent });
    const text = await response.body.text();
    if (response.statusCode !== 200 || text.includes('"errors"')) throw new Error(text.slice(0, 300));
  };
  const run = async (count) => {
    let sent = 0;
    await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
      while (sent++ < count) await one();
    }));
  };
  // PAGED: the end cursors of every page first (one walk), then requests take the pages in turn.
  for (let after = null, page = 0; paged && page < paged; page++) {
    const text = JSON.stringify({ query: PAGES_QUERY, variables: { after } });
    pageBodies.push(text);
    const response = await request(server.url, { method: 'POST', headers, body: text, dispatcher: agent });
    const { data } = JSON.parse(await response.body.text());
    after = data.locations.pageInfo.endCursor;
  }
  // PRETRACE=1: one traced request first, so the untraced ones run on the wrapped resolvers.
  if (process.env.PRETRACE) await one({ 'apollo-federation-include-trace': 'ftv1' });
  await run(WARMUP);
  const perRequest = [];
  for (let round = 0; round < ROUNDS; round++) {
    const before = process.cpuUsage();
    await run(PER_ROUND);
    const used = process.cpuUsage(before);
    perRequest.push((used.user + used.system) / 1000 / PER_ROUND);
  }
  perRequest.sort((a, b) => a - b);
  process.stdout.write(`cpu ms/req (emulator + server + client, one process): median ${perRequest[ROUNDS >> 1].toFixed(3)}, min ${perRequest[0].toFixed(3)}; rss ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB\n`);
  await agent.close();
  await close();
  process.exit(0);
})().catch((error) => {
  process.stderr.write(`${error.stack ?? error}\n`);
  process.exit(1);
});
