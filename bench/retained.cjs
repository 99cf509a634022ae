// The heap one waiting request holds (bench/README.md, "What a waiting request holds"):
// N requests, each of its own company (nothing shared or coalesced), wait on an upstream
// that answers slowly; the heap after full collections, minus the heap when idle,
// divided by N. Unlike CPU time it does not move with the machine's load (two runs
// agree within 0.1 KiB), so a change to what the request path keeps across the
// upstream wait can be judged on a busy machine. What is held there is what every
// young-generation collection copies while requests wait.
//
//   npm run build && npx tsc -p tsconfig.bench.json
//   node_modules/.bin/node --expose-gc bench/retained.cjs              # the subgraph
//   APOLLO=1 node_modules/.bin/node --expose-gc bench/retained.cjs     # the bench's `apollo` target
//   SNAP=1 ...                          # also writes heap snapshots (idle, waiting) to the temp folder
//   N=50 ...                            # requests waiting (default 100; the emulator refuses far more on one shard)
//
// An argument names another build's dist/ folder (default: this checkout's).
'use strict';
const os = require('node:os');
const path = require('node:path');
const v8 = require('node:v8');
const { startInProcess } = require('./inProcess.cjs');

const dist = path.resolve(process.argv[2] ?? path.join(__dirname, '..', 'dist'));
const { makeTenant } = require(path.join(dist, 'emulator'));
const { Agent, request } = require('undici');

const N = Number(process.env.N) || 100;
const QUERY = 'query BenchPages($after: String) { locations(first: 100, after: $after) { nodes { id name } pageInfo { hasNextPage endCursor } } }';
const target = process.env.APOLLO ? 'apollo' : 'subgraph';

(async () => {
  if (typeof global.gc !== 'function') throw new Error('run with --expose-gc');
  const tenants = Array.from({ length: N }, (_, i) =>
    makeTenant({ tenantId: `be0c0000-0000-4000-8000-${String(i + 1).padStart(12, '0')}`, clientId: `c${i}`, clientSecret: `s${i}-abcdefgh`, grantedScopes: ['shifts.read'], shard: 0, locationCount: 200, shiftCount: 50 }),
  );
  const { emulator, server, close } = await startInProcess({ dist, tenants, target });
  const agent = new Agent({ connections: 2 * N });
  const body = JSON.stringify({ query: QUERY });
  const one = async (tenant) => {
    const response = await request(server.url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-tenant-id': tenant.tenantId }, body, dispatcher: agent });
    const text = await response.body.text();
    if (response.statusCode !== 200 || text.includes('"errors"')) throw new Error(text.slice(0, 300));
  };
  // Tokens fetched, code warm, caches as they are in steady state.
  for (let round = 0; round < 3; round++) await Promise.all(tenants.map(one));
  const heap = () => {
    global.gc();
    global.gc();
    return process.memoryUsage().heapUsed;
  };
  const snapshot = (name) => process.env.SNAP && process.stdout.write(`snapshot: ${v8.writeHeapSnapshot(path.join(os.tmpdir(), `retained-${target}-${name}.heapsnapshot`))}\n`);
  const idle = heap();
  snapshot('idle');
  emulator.configure({ latencyMs: 3000 });
  const pending = Promise.all(tenants.map(one));
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const waiting = heap();
  snapshot('waiting');
  await pending;
  process.stdout.write(`${target}: retained per waiting request ${((waiting - idle) / N / 1024).toFixed(2)} KiB (N=${N})\n`);
  await agent.close();
  await close();
  process.exit(0);
})().catch((error) => {
  process.stderr.write(`${error.stack ?? error}\n`);
  process.exit(1);
});
