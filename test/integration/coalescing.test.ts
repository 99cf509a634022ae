import { Writable } from 'node:stream';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/observability/logger';
import { startServer, type RunningServer } from '../../src/server';
import { HeldCalls } from '../helpers/heldCalls';
import { makeLocations, startForeignUpstream, type ForeignUpstream } from '../helpers/foreignUpstream';
import { foreignUpstreamEnv, postGraphQL } from '../helpers/subgraph';
import { counterTotal, waitFor } from '../helpers/waitFor';

/**
 * In-flight coalescing across GraphQL requests (docs/limits.md, "Upstream faults and limits"), over real HTTP. The
 * fake upstream holds each list call until the test releases it, so "concurrent" is
 * a fact the test waits for (the coalesced-hits counter), not a timing accident.
 */

let up: ForeignUpstream;
let server: RunningServer;
/** Held list calls, per tenant name. */
const heldCalls = new HeldCalls();


const TENANTS = ['alpha', 'beta', 'gamma', 'delta'];

beforeAll(async () => {
  up = await startForeignUpstream();
  up.add({ name: 'alpha', locations: makeLocations(12), fault: heldCalls.hold('alpha') });
  up.add({ name: 'beta', locations: makeLocations(12).map((l) => ({ ...(l as object), name: `Beta ${(l as { name: string }).name}` })), fault: heldCalls.hold('beta') });
  up.add({ name: 'gamma', locations: makeLocations(12), fault: heldCalls.hold('gamma') });
  up.add({ name: 'delta', locations: makeLocations(12), fault: heldCalls.hold('delta') });
  const config = loadConfig(
    foreignUpstreamEnv(up, {
      WFS_CURSOR_SECRET: 'coalescing-cursor-secret-0123456789abcdef',
      LOG_LEVEL: 'silent',
    }),
  );
  server = await startServer(config, { logger: createLogger('silent', new Writable({ write: (_c, _e, cb) => cb() })) });
});

afterAll(async () => {
  heldCalls.holding = false;
  for (const name of TENANTS) heldCalls.release(name);
  await up?.close();
  await server?.close();
});

const QUERY = '{ locations(first: 5) { nodes { id name } } }';

// Each request's text differs (a numbered comment): identical requests would share one
// execution (sharedRequests.test.ts) and never reach the upstream coalescer tested here.
let sent = 0;
const gql = (name: string, signal?: AbortSignal) => postGraphQL(server.url, { query: `# ${++sent}\n${QUERY}` }, { 'x-tenant-id': up.tenant(name).tenantId }, signal);

const coalesced = () => counterTotal(server.metrics.upstreamCoalesced);
const locationCalls = (name: string) => up.tenant(name).calls.filter((call) => call.list === 'locations').length;

it('serves 50 concurrent identical queries of one tenant with 1 upstream list call', async () => {
  const before = await coalesced();
  const answers = Array.from({ length: 50 }, () => gql('alpha'));
  await waitFor(async () => (await coalesced()) - before === 49, '49 requests joining the call in flight');
  expect(locationCalls('alpha')).toBe(1);
  heldCalls.release('alpha');
  const responses = await Promise.all(answers);
  for (const response of responses) {
    expect(response.errors).toBeUndefined();
    expect(response.data.locations.nodes).toHaveLength(5);
  }
  expect(new Set(responses.map((r) => JSON.stringify(r.data))).size).toBe(1);
  expect(locationCalls('alpha')).toBe(1);
});

it('never shares a call between tenants: the same query for two tenants makes 2 calls, each with its own data', async () => {
  const before = await coalesced();
  const answers = [...Array.from({ length: 10 }, () => gql('beta')), ...Array.from({ length: 10 }, () => gql('gamma'))];
  await waitFor(async () => (await coalesced()) - before === 18 && locationCalls('beta') === 1 && locationCalls('gamma') === 1, 'two calls in flight, 18 joins');
  heldCalls.release('beta');
  heldCalls.release('gamma');
  const responses = await Promise.all(answers);
  const names = responses.map((r) => (r.data.locations.nodes as Array<{ name: string }>)[0]!.name);
  expect(names.slice(0, 10).every((name) => name.startsWith('Beta '))).toBe(true);
  expect(names.slice(10).every((name) => !name.startsWith('Beta '))).toBe(true);
  expect(locationCalls('beta')).toBe(1);
  expect(locationCalls('gamma')).toBe(1);
});

it("keeps the shared call for the others when one waiter aborts, and keeps nothing once it settles", async () => {
  const before = await coalesced();
  const abortedBefore = await counterTotal(server.metrics.graphqlAborted);
  const leaving = new AbortController();
  const gone = gql('delta', leaving.signal).catch((error: unknown) => error);
  const staying = [gql('delta'), gql('delta')];
  await waitFor(async () => (await coalesced()) - before === 2, 'two requests joining');
  leaving.abort();
  await expect(gone).resolves.toMatchObject({ name: 'AbortError' });
  // The subgraph has let the aborted request go (counted as aborted) before the upstream answers.
  await waitFor(async () => (await counterTotal(server.metrics.graphqlAborted)) - abortedBefore === 1, 'the aborted waiter to leave');
  const call = heldCalls.held.get('delta')![0]!;
  expect(call.res.destroyed).toBe(false);
  heldCalls.release('delta');
  for (const response of await Promise.all(staying)) {
    expect(response.errors).toBeUndefined();
    expect(response.data.locations.nodes).toHaveLength(5);
  }
  expect(locationCalls('delta')).toBe(1);
  // Nothing kept: the next query calls again.
  heldCalls.holding = false;
  await expect(gql('delta')).resolves.toMatchObject({ data: { locations: { nodes: expect.any(Array) } } });
  expect(locationCalls('delta')).toBe(2);
  heldCalls.holding = true;
});

it('cancels the upstream call when every waiter has gone', async () => {
  const before = await coalesced();
  const a = new AbortController();
  const b = new AbortController();
  const answers = [gql('alpha', a.signal).catch((e: unknown) => e), gql('alpha', b.signal).catch((e: unknown) => e)];
  await waitFor(async () => (await coalesced()) - before === 1 && heldCalls.count('alpha') === 1, 'one held call, one join');
  const call = heldCalls.held.get('alpha')![0]!;
  const closed = new Promise<void>((resolve) => call.res.on('close', () => resolve()));
  a.abort();
  b.abort();
  await Promise.all(answers);
  await closed;
  heldCalls.held.set('alpha', []);
});
