import { Writable } from 'node:stream';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/observability/logger';
import { startServer, type RunningServer } from '../../src/server';
import { makeLocations, startForeignUpstream, type FaultContext, type ForeignUpstream } from '../helpers/foreignUpstream';
import { foreignUpstreamEnv, postGraphQL } from '../helpers/subgraph';
import { counterTotal, waitFor } from '../helpers/waitFor';

/**
 * The bulkhead per tenant (docs/limits.md, "Upstream faults and limits"), over real HTTP: one company's burst of distinct
 * queries holds at most its concurrency limit of upstream calls, queues a bounded
 * number, refuses the rest at once, and another company is served meanwhile.
 */

const CONCURRENCY = 4;
const QUEUE = 8;
const BURST = 40;

let up: ForeignUpstream;
let server: RunningServer;
const held: FaultContext[] = [];
let holding = true;

beforeAll(async () => {
  up = await startForeignUpstream();
  up.add({
    name: 'bursty',
    locations: makeLocations(120),
    fault: (ctx) => {
      if (!holding) return false;
      held.push(ctx);
      return true;
    },
  });
  up.add({ name: 'calm', locations: makeLocations(12) });
  const config = loadConfig(
    foreignUpstreamEnv(up, {
      WFS_CURSOR_SECRET: 'bulkhead-cursor-secret-0123456789abcdef',
      LOG_LEVEL: 'silent',
    }),
  );
  server = await startServer(config, {
    logger: createLogger('silent', new Writable({ write: (_c, _e, cb) => cb() })),
    upstream: { bulkhead: { concurrency: CONCURRENCY, queue: QUEUE } },
  });
});

afterAll(async () => {
  holding = false;
  for (const ctx of held) ctx.res.destroy();
  await up?.close();
  await server?.close();
});

const gql = (name: string, query: string) => postGraphQL(server.url, { query }, { 'x-tenant-id': up.tenant(name).tenantId });

it("bounds one tenant's concurrent upstream calls, queues a few, refuses the rest, and serves another tenant meanwhile", async () => {
  const metrics = server.metrics.resilience;
  // Distinct page sizes: distinct upstream pages, so nothing is coalesced.
  const burst = Array.from({ length: BURST }, (_, i) => gql('bursty', `{ locations(first: ${i + 1}) { nodes { id } } }`));
  await waitFor(
    async () => (await counterTotal(metrics.bulkheadRejected)) === BURST - CONCURRENCY - QUEUE && held.length === CONCURRENCY,
    'the overflow to be refused and the limit of calls to be in flight',
  );
  expect(await counterTotal(metrics.bulkheadQueued)).toBe(QUEUE);

  // Another company is not starved.
  const calm = await gql('calm', '{ locations(first: 5) { nodes { id } } }');
  expect(calm.errors).toBeUndefined();
  expect(calm.data.locations.nodes).toHaveLength(5);

  holding = false;
  for (const ctx of held.splice(0)) {
    ctx.res.writeHead(200, { 'content-type': 'application/json' });
    ctx.res.end(JSON.stringify(ctx.envelope()));
  }
  const responses = await Promise.all(burst);
  const codes = responses.map((r) => r.errors?.[0]?.extensions?.code ?? 'served');
  expect(codes.filter((c) => c === 'served')).toHaveLength(CONCURRENCY + QUEUE);
  expect(codes.filter((c) => c === 'UPSTREAM_RATE_LIMITED')).toHaveLength(BURST - CONCURRENCY - QUEUE);
  expect(up.tenant('bursty').calls.filter((call) => call.list === 'locations')).toHaveLength(CONCURRENCY + QUEUE);
});
