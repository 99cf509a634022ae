import { Writable } from 'node:stream';
import type { ApolloServerPlugin } from '@apollo/server';
import { loadConfig } from '../../src/config';
import type { GraphQLContext } from '../../src/graphql/data/context';
import { createLogger } from '../../src/observability/logger';
import { startServer, type RunningServer } from '../../src/server';
import { HeldCalls } from '../helpers/heldCalls';
import { makeLocations, startForeignUpstream, type ForeignUpstream } from '../helpers/foreignUpstream';
import { errorCodes, foreignUpstreamEnv, postGraphQL } from '../helpers/subgraph';
import { counterTotal, waitFor } from '../helpers/waitFor';

/**
 * Identical requests in flight share one execution (src/http/sharedRequests.ts), over
 * real HTTP. The fake upstream holds each list call until the test releases it; a
 * test plugin counts the requests that reached their operation and those executed.
 */

let up: ForeignUpstream;
let server: RunningServer;
const heldCalls = new HeldCalls();
let resolved = 0;
let executed = 0;


const counting: ApolloServerPlugin<GraphQLContext> = {
  async requestDidStart() {
    return {
      async didResolveOperation() {
        resolved += 1;
      },
      async executionDidStart() {
        executed += 1;
      },
    };
  },
};

beforeAll(async () => {
  up = await startForeignUpstream();
  up.add({ name: 'alpha', locations: makeLocations(12), fault: heldCalls.hold('alpha') });
  up.add({ name: 'beta', locations: makeLocations(12).map((l) => ({ ...(l as object), name: `Beta ${(l as { name: string }).name}` })), fault: heldCalls.hold('beta') });
  const config = loadConfig(foreignUpstreamEnv(up, { WFS_CURSOR_SECRET: 'shared-requests-cursor-secret-0123456789ab', LOG_LEVEL: 'silent' }));
  server = await startServer(config, { logger: createLogger('silent', new Writable({ write: (_c, _e, cb) => cb() })), plugins: [counting] });
});

afterAll(async () => {
  heldCalls.holding = false;
  heldCalls.release('alpha');
  heldCalls.release('beta');
  await up?.close();
  await server?.close();
});

beforeEach(() => {
  resolved = 0;
  executed = 0;
});

const QUERY = '{ locations(first: 5) { nodes { id name } } }';
const gql = (name: string, signal?: AbortSignal, headers: Record<string, string> = {}) =>
  postGraphQL(server.url, { query: QUERY }, { 'x-tenant-id': up.tenant(name).tenantId, ...headers }, signal);
const requests = (operationType: string) => counterTotal(server.metrics.graphqlRequests, { operation_type: operationType });

it('executes 30 identical concurrent queries of one tenant once; each request is still counted and answered', async () => {
  const countedBefore = await requests('query');
  const sharedBefore = await counterTotal(server.metrics.requestsShared);
  const answers = Array.from({ length: 30 }, () => gql('alpha'));
  await waitFor(() => resolved === 30 && heldCalls.count('alpha') === 1, 'all 30 requests past validation, one upstream call held');
  heldCalls.release('alpha');
  const responses = await Promise.all(answers);
  expect(executed).toBe(1);
  for (const response of responses) expect(response).toMatchObject({ status: 200, data: { locations: { nodes: expect.any(Array) } } });
  expect(new Set(responses.map((r) => JSON.stringify(r.data))).size).toBe(1);
  expect((await requests('query')) - countedBefore).toBe(30);
  // The 29 that took the first one's answer are counted as shared.
  expect((await counterTotal(server.metrics.requestsShared)) - sharedBefore).toBe(29);
  // Nothing kept: the next identical request executes (and calls the upstream) again.
  const calls = up.tenant('alpha').calls.length;
  heldCalls.holding = false;
  await expect(gql('alpha')).resolves.toMatchObject({ data: { locations: { nodes: expect.any(Array) } } });
  heldCalls.holding = true;
  expect(executed).toBe(2);
  expect(up.tenant('alpha').calls.length).toBe(calls + 1);
});

it('never shares between tenants, nor with a request that asks for a trace', async () => {
  const answers = [gql('alpha'), gql('alpha'), gql('beta'), gql('beta'), gql('alpha', undefined, { 'apollo-federation-include-trace': 'ftv1' })];
  await waitFor(() => resolved === 5 && heldCalls.count('alpha') === 1 && heldCalls.count('beta') === 1, 'all five past validation, one call per tenant held');
  heldCalls.release('alpha');
  heldCalls.release('beta');
  const [a1, a2, b1, b2, traced] = await Promise.all(answers);
  expect(executed).toBe(3); // alpha once, beta once, the traced request on its own
  expect(a1!.data).toEqual(a2!.data);
  expect(b1!.data).toEqual(b2!.data);
  expect((b1!.data.locations.nodes as Array<{ name: string }>)[0]!.name).toMatch(/^Beta /);
  expect((a1!.data.locations.nodes as Array<{ name: string }>)[0]!.name).not.toMatch(/^Beta /);
  expect((traced as { extensions?: object }).extensions).toHaveProperty('ftv1');
  expect((a1 as { extensions?: object }).extensions).toBeUndefined();
});

it('refuses an unknown tenant per request, even with the same body as a shared one', async () => {
  const answers = [gql('alpha'), postGraphQL(server.url, { query: QUERY }, { 'x-tenant-id': 'nobody' })];
  await waitFor(() => heldCalls.count('alpha') === 1, 'the known tenant\'s call in flight');
  heldCalls.release('alpha');
  const [known, unknown] = await Promise.all(answers);
  expect(known!.data.locations.nodes).toHaveLength(5);
  expect(errorCodes(unknown!)).toEqual(['FORBIDDEN']);
});

it("hands the lead to a joiner when the leader's client leaves: one more execution, whose answer the other joiner takes", async () => {
  const leaving = new AbortController();
  const leader = gql('alpha', leaving.signal).catch((error: unknown) => error);
  await waitFor(() => resolved === 1 && heldCalls.count('alpha') === 1, 'the leader waiting on the upstream');
  const joiners = [gql('alpha'), gql('alpha')];
  await waitFor(() => resolved === 3, 'two joiners waiting');
  leaving.abort();
  await expect(leader).resolves.toMatchObject({ name: 'AbortError' });
  // One joiner leads now: a fresh call (the leader's was cancelled with its last waiter); the other waits for its answer.
  await waitFor(() => executed === 2 && heldCalls.count('alpha') === 2, 'the new leader executing');
  heldCalls.release('alpha');
  for (const response of await Promise.all(joiners)) expect(response.data.locations.nodes).toHaveLength(5);
  expect(executed).toBe(2);
});
