import { gql, type ApolloClient, type ObservableQuery } from '@apollo/client';
import type { Client as UrqlClient, TypedDocumentNode } from '@urql/core';
import type { Counter } from 'prom-client';
import { requestSubscription, type Environment } from 'relay-runtime';
import ts from 'typescript';
import { startPeopleSubgraph, type RunningPeopleSubgraph } from '../../examples/people-subgraph/server';
import ShiftChangesSubscription from '../../examples/relay/src/__generated__/ShiftChangesSubscription.graphql';
import { createTenantEnvironment } from '../../examples/relay/src/environment';
import { shiftChangesUpdater } from '../../examples/relay/src/liveUpdates';
import { createClient } from 'graphql-ws';
import { testTenant } from '../helpers/fixtures';
import { HIVE_ROUTER_SECRET, startHiveGateway, type RunningGateway } from '../helpers/hiveGateway';
import { wsUrl } from '../helpers/liveClient';
import { readDoc, section } from '../helpers/markdown';
import { editShiftEnd } from '../helpers/relayLive';
import { startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';
import { counterTotal, waitFor } from '../helpers/waitFor';

/**
 * docs/frontend.md's "Live updates" recipes for Apollo Client 4 and urql, run as the page
 * prints them (its TypeScript blocks, compiled and evaluated; only the gateway's URLs and
 * the declared `tenantId` and `showLiveError` are supplied), through Hive Gateway with
 * the committed router/gateway.config.ts:
 *
 * - on a partial page (a company of 120 shifts, the rota's first 100) an ADDED shift is
 *   not appended: the cached page stays the 100 a fresh query returns;
 * - on a whole list (20 shifts) it is;
 * - a refused subscription (no `shifts.read`: a `next` with FORBIDDEN, then `complete`)
 *   reaches `showLiveError`;
 * - and, against the subgraph itself, a refused identity (close 4403) reaches
 *   `showLiveError` at once, after one connection: the recipe's `shouldRetry` does not
 *   retry it (graphql-ws by default would, 5 times, for about a minute). Relay's
 *   environment hands the same close to `onError` as an Error naming 4403.
 */

const PARTIAL = testTenant('a', { locations: 4, shifts: 120, scopes: ['shifts.read'] });
const WHOLE = testTenant('b', { locations: 3, shifts: 20, scopes: ['shifts.read'] });
const NO_SHIFTS = testTenant('c', { locations: 3, shifts: 5, scopes: ['locations.read'] });
const UNKNOWN_TENANT = 'ffffffff-0000-4000-8000-00000000abcd';

const page = readDoc('docs/frontend.md');
const blocks = [...section(page, 'Live updates').matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1]!);
const APOLLO = blocks.find((block) => block.includes('subscribeToMore'))!;
const URQL = blocks.find((block) => block.includes('subscriptionExchange'))!;

interface RotaShift { id: string; nodeId: string; end: string }
interface Rota { shifts: { nodes: RotaShift[]; pageInfo: { hasNextPage: boolean } } | null }

/** A recipe block compiled to CommonJS and run with the URLs, tenant and error sink given. */
function runRecipe<T>(block: string, urls: { http: string; ws: string }, tenantId: string, showLiveError: (error: Error) => void): T {
  const source = block.replaceAll('wss://gateway.example.com/graphql', urls.ws).replaceAll('https://gateway.example.com/graphql', urls.http);
  const { outputText } = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } });
  const exported: Record<string, unknown> = {};
  new Function('require', 'exports', 'tenantId', 'showLiveError', outputText)(require, exported, tenantId, showLiveError);
  return exported as T;
}

interface ApolloRecipe { liveClient: ApolloClient; rota: ObservableQuery<Rota>; stopLive: () => void }
interface UrqlRecipe { urqlLive: UrqlClient; rotaQuery: TypedDocumentNode<Rota>; stopLive: () => void }

describe("docs/frontend.md's live recipes, as printed, through Hive Gateway", () => {
  let subgraph: TestSubgraph;
  let people: RunningPeopleSubgraph;
  let gateway: RunningGateway;
  let stops: Array<() => void> = [];

  beforeAll(async () => {
    subgraph = await startTestSubgraph({ tenants: [PARTIAL, WHOLE, NO_SHIFTS] }, { WFS_ROUTER_SECRET: HIVE_ROUTER_SECRET, LOG_LEVEL: 'warn' }, { live: { pollIntervalMs: 100 } });
    people = await startPeopleSubgraph();
    gateway = await startHiveGateway({ wfs: subgraph.server.url, people: people.url }, HIVE_ROUTER_SECRET);
    // A gateway in service has answered a request before (the runtime this helper builds
    // loads the supergraph on its first HTTP request; a graphql-ws subscription that
    // comes first is answered "Unexpected error."), and each recipe subscribes at once.
    expect(await gateway.query('{ __typename }', {})).toEqual({ data: { __typename: 'Query' } });
  });
  afterEach(async () => {
    for (const stop of stops) stop();
    stops = [];
    await waitFor(() => subgraph.server.live.subscriptions === 0, 'the subscriptions ended');
  });
  afterAll(async () => {
    await gateway?.close();
    await people?.close();
    await subgraph?.close();
  });

  const urls = () => ({ http: gateway.url, ws: wsUrl(gateway.url) });
  const tenant = (id: string) => subgraph.emulator.tenants.find((t) => t.tenantId === id)!;
  const polls = () => counterTotal(subgraph.server.metrics.registry.getSingleMetric('wfs_live_polls_total') as Counter<string>, { outcome: 'ok' });
  const noError = (error: Error) => {
    throw new Error(`showLiveError: ${error.message}`);
  };
  /** Once the subscription reached the subgraph and a poll after `since` is done. */
  const subscribed = async (since: number) => {
    await waitFor(() => subgraph.server.live.subscriptions === 1, 'the gateway subscribed to our subgraph');
    await waitFor(async () => (await polls()) > since, 'the baseline poll');
  };
  /** A shift added at the end of the company's list; resolves once a poll that began after it is done. */
  const addShift = async (tenantId: string, id: string) => {
    const shifts = tenant(tenantId).shifts;
    const before = await polls();
    shifts.push({ ...shifts[0]!, id });
    await waitFor(async () => (await polls()) >= before + 2, 'a poll that saw the added shift');
  };

  it('Apollo Client 4 on a partial page: an ADDED shift is not appended, the cached page stays the 100 a fresh query returns', async () => {
    const since = await polls();
    const recipe = runRecipe<ApolloRecipe>(APOLLO, urls(), PARTIAL.tenantId, noError);
    stops.push(recipe.stopLive, () => recipe.liveClient.stop());
    const watching = recipe.rota.subscribe({});
    stops.push(() => watching.unsubscribe());
    const current = () => recipe.rota.getCurrentResult().data as Rota | undefined;
    await waitFor(() => current()?.shifts?.nodes.length === 100, 'the first page');
    expect(current()!.shifts!.pageInfo.hasNextPage).toBe(true);
    await subscribed(since);

    await addShift(PARTIAL.tenantId, 'apollo-partial-added');
    // A later change, on the page: once it shows, the ADDED before it was handled too.
    const edited = tenant(PARTIAL.tenantId).shifts[2]!;
    const end = editShiftEnd(edited);
    await waitFor(() => current()!.shifts!.nodes.find((node) => node.id === edited.id)?.end === end, 'the later UPDATED in the watched rota');
    const cached = current()!.shifts!.nodes.map((node) => node.id);
    expect(cached).toHaveLength(100);
    expect(cached).not.toContain('apollo-partial-added');
    const fresh = await recipe.liveClient.query<Rota>({ query: gql`query Rota { shifts(first: 100) { nodes { id nodeId end } pageInfo { hasNextPage } } }`, fetchPolicy: 'network-only' });
    expect(cached).toEqual(fresh.data!.shifts!.nodes.map((node) => node.id));
  });

  it('Apollo Client 4 on a whole list: an ADDED shift is appended', async () => {
    const since = await polls();
    const recipe = runRecipe<ApolloRecipe>(APOLLO, urls(), WHOLE.tenantId, noError);
    stops.push(recipe.stopLive, () => recipe.liveClient.stop());
    const watching = recipe.rota.subscribe({});
    stops.push(() => watching.unsubscribe());
    const current = () => recipe.rota.getCurrentResult().data as Rota | undefined;
    await waitFor(() => current()?.shifts?.nodes.length === 20, 'the whole list');
    expect(current()!.shifts!.pageInfo.hasNextPage).toBe(false);
    await subscribed(since);
    await addShift(WHOLE.tenantId, 'apollo-whole-added');
    await waitFor(() => current()!.shifts!.nodes.at(-1)?.id === 'apollo-whole-added', 'the added shift at the end of the rota');
    expect(current()!.shifts!.nodes).toHaveLength(21);
    tenant(WHOLE.tenantId).shifts.pop();
    await waitFor(() => current()!.shifts!.nodes.length === 20, 'the removed shift gone');
  });

  it('urql on a partial page: an ADDED shift is not appended, the cached page stays the 100 a fresh query returns', async () => {
    const since = await polls();
    const recipe = runRecipe<UrqlRecipe>(URQL, urls(), PARTIAL.tenantId, noError);
    stops.push(recipe.stopLive);
    const first = await recipe.urqlLive.query(recipe.rotaQuery, {}).toPromise();
    expect(first.error).toBeUndefined();
    expect(first.data!.shifts!.nodes).toHaveLength(100);
    expect(first.data!.shifts!.pageInfo.hasNextPage).toBe(true);
    await subscribed(since);
    const cachedRota = async () => (await recipe.urqlLive.query(recipe.rotaQuery, {}, { requestPolicy: 'cache-only' }).toPromise()).data!.shifts!.nodes;

    await addShift(PARTIAL.tenantId, 'urql-partial-added');
    const edited = tenant(PARTIAL.tenantId).shifts[3]!;
    const end = editShiftEnd(edited);
    await waitFor(async () => (await cachedRota()).find((node) => node.id === edited.id)?.end === end, 'the later UPDATED in the cached rota');
    const cached = (await cachedRota()).map((node) => node.id);
    expect(cached).toHaveLength(100);
    expect(cached).not.toContain('urql-partial-added');
    const fresh = await recipe.urqlLive.query(recipe.rotaQuery, {}, { requestPolicy: 'network-only' }).toPromise();
    expect(cached).toEqual(fresh.data!.shifts!.nodes.map((node) => node.id));
  });

  it('urql on a whole list: an ADDED shift is appended', async () => {
    const since = await polls();
    const recipe = runRecipe<UrqlRecipe>(URQL, urls(), WHOLE.tenantId, noError);
    stops.push(recipe.stopLive);
    const first = await recipe.urqlLive.query(recipe.rotaQuery, {}).toPromise();
    expect(first.data!.shifts!.nodes).toHaveLength(20);
    await subscribed(since);
    const cachedRota = async () => (await recipe.urqlLive.query(recipe.rotaQuery, {}, { requestPolicy: 'cache-only' }).toPromise()).data!.shifts!.nodes;
    await addShift(WHOLE.tenantId, 'urql-whole-added');
    await waitFor(async () => (await cachedRota()).at(-1)?.id === 'urql-whole-added', 'the added shift at the end of the cached rota');
    expect(await cachedRota()).toHaveLength(21);
    tenant(WHOLE.tenantId).shifts.pop();
    await waitFor(async () => (await cachedRota()).length === 20, 'the removed shift gone');
  });

  it('a refused subscription (no shifts.read: FORBIDDEN, then complete) reaches showLiveError in both recipes', async () => {
    const apolloErrors: Error[] = [];
    const apollo = runRecipe<ApolloRecipe>(APOLLO, urls(), NO_SHIFTS.tenantId, (error) => apolloErrors.push(error));
    stops.push(apollo.stopLive, () => apollo.liveClient.stop());
    await waitFor(() => apolloErrors.length === 1, "Apollo's onError");
    expect((apolloErrors[0] as unknown as { errors: Array<{ extensions?: { code?: string } }> }).errors.map((error) => error.extensions?.code)).toEqual(['FORBIDDEN']);

    const urqlErrors: Error[] = [];
    const urql = runRecipe<UrqlRecipe>(URQL, urls(), NO_SHIFTS.tenantId, (error) => urqlErrors.push(error));
    stops.push(urql.stopLive);
    // (Graphcache may hand the same errored result on more than once.)
    await waitFor(() => urqlErrors.length >= 1, "urql's result.error");
    for (const error of urqlErrors) expect((error as unknown as { graphQLErrors: Array<{ extensions?: { code?: string } }> }).graphQLErrors.map((e) => e.extensions?.code)).toEqual(['FORBIDDEN']);
  });
});

describe('a refused identity (close 4403) in the recipes, against the subgraph', () => {
  let subgraph: TestSubgraph;
  const realWebSocket = globalThis.WebSocket;
  let opened = 0;

  beforeAll(async () => {
    subgraph = await startTestSubgraph({ tenants: [WHOLE] }, { LOG_LEVEL: 'error' });
    // Counts the connections graphql-ws opens (it takes the global WebSocket when created).
    globalThis.WebSocket = class extends realWebSocket {
      constructor(...args: ConstructorParameters<typeof WebSocket>) {
        super(...args);
        opened += 1;
      }
    };
  });
  beforeEach(() => {
    opened = 0;
  });
  afterAll(async () => {
    globalThis.WebSocket = realWebSocket;
    await subgraph?.close();
  });

  const urls = () => ({ http: subgraph.server.url, ws: wsUrl(subgraph.server.url) });
  const closedWith4403 = (error: Error) => JSON.stringify({ message: error.message, cause: String((error as { cause?: unknown }).cause ?? ''), network: String((error as { networkError?: unknown }).networkError ?? '') });

  it('Apollo Client 4: onError hears it at once, after one connection (no retry)', async () => {
    const errors: Error[] = [];
    const recipe = runRecipe<ApolloRecipe>(APOLLO, urls(), UNKNOWN_TENANT, (error) => errors.push(error));
    try {
      await waitFor(() => errors.length === 1, "Apollo's onError");
      expect(opened).toBe(1);
      expect(closedWith4403(errors[0]!)).toMatch(/4403/);
    } finally {
      recipe.stopLive();
      recipe.liveClient.stop();
    }
  });

  it('urql: the result carries it at once, after one connection (no retry)', async () => {
    const errors: Error[] = [];
    const recipe = runRecipe<UrqlRecipe>(URQL, urls(), UNKNOWN_TENANT, (error) => errors.push(error));
    try {
      await waitFor(() => errors.length >= 1, "urql's result.error");
      expect(opened).toBe(1);
      // urql's CombinedError holds the socket's close event as its networkError.
      const closed = (errors[0] as unknown as { networkError?: { code?: number; reason?: string } }).networkError;
      expect({ code: closed?.code, reason: closed?.reason }).toEqual({ code: 4403, reason: expect.stringMatching(/^[A-Z_]+: /) });
    } finally {
      recipe.stopLive();
    }
  });

  it("Relay (examples/relay's environment): onError gets an Error naming the 4403 close", async () => {
    const live = createClient({
      url: wsUrl(subgraph.server.url),
      connectionParams: { headers: { 'x-tenant-id': UNKNOWN_TENANT } },
      shouldRetry: (event) => typeof (event as CloseEvent | null)?.code === 'number' && (event as CloseEvent).code !== 4403,
    });
    const environment: Environment = createTenantEnvironment({ url: subgraph.server.url, headers: { 'x-tenant-id': UNKNOWN_TENANT }, live });
    const errors: Error[] = [];
    const subscription = requestSubscription(environment, { subscription: ShiftChangesSubscription, variables: {}, updater: shiftChangesUpdater, onError: (error) => errors.push(error) });
    try {
      await waitFor(() => errors.length === 1, "Relay's onError");
      expect(opened).toBe(1);
      expect(errors[0]!.message).toMatch(/^live updates closed: 4403 /);
    } finally {
      subscription.dispose();
      await live.dispose();
    }
  });
});
