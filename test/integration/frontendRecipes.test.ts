import type { ApolloClient } from '@apollo/client';
import { ApolloProvider } from '@apollo/client/react';
import type { Client as UrqlClient } from '@urql/core';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { createElement } from 'react';
import { loadConfig } from '../../src/config';
import { startDemo, type Demo } from '../../src/demo';
import { makeTenant, type EmulatorTenant } from '../../tools/emulator';
import { createLogger } from '../../src/observability/logger';
import { startServer, type RunningServer } from '../../src/server';
import { wsUrl } from '../helpers/liveClient';
import {
  APOLLO_CLIENT,
  APOLLO_PICKER,
  APOLLO_RECIPE,
  REFUSAL_HELPER,
  URQL_CLIENT,
  URQL_RECIPE,
  runBlock,
  runRecipe,
  type ApolloRecipe,
  type RefusalHelper,
  type UrqlRecipe,
} from '../helpers/liveRecipes';
import { createClient, useLocations } from '../../examples/frontend/apollo';
import { startTestIdentityProvider, type TestIdentityProvider } from '../helpers/jwks';
import { renderHook } from '../helpers/reactHost';
import { createClient as createWsClient } from 'graphql-ws';
import { requestSubscription } from 'relay-runtime';
import ShiftChangesSubscription from '../../examples/relay/src/__generated__/ShiftChangesSubscription.graphql';
import { createTenantEnvironment } from '../../examples/relay/src/environment';
import { shiftChangesUpdater } from '../../examples/relay/src/liveUpdates';
import { startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';
import { waitFor } from '../helpers/waitFor';

/**
 * docs/frontend.md's recipes run as the page prints them (test/helpers/liveRecipes.ts:
 * only the example URLs, the credential and what a block declares are supplied) against
 * the running subgraph, served directly as `npm start` and the demo serve it:
 *
 * - paging the location picker: Apollo Client 4's client block and its
 *   `useLocationPicker` hook, and examples/frontend/apollo.ts's `createClient` and
 *   `useLocations`, rendered by React (test/helpers/reactHost.ts), each with two
 *   `loadMore` calls; urql's client block with Graphcache's relayPagination() and its
 *   `loadLocations`. Relay's paging (examples/relay) runs in clients.test.ts;
 * - the same client and hook on the demo as `npm start` serves it (its seeded companies,
 *   trusted-header mode): the company of 130 locations loads its second page;
 * - the code of a refused live connection, read by the page's `refusalCode` from what
 *   the "Live updates" recipes hand to `showLiveError` (and Relay, on examples/relay's
 *   environment, to `onError`): a refused identity (the socket closed with 4403) and a
 *   refused subscription (a GraphQL error).
 */

/** More locations than three pages of LocationPicker's 100: the third page still says there are more. */
const MANY_SITES = makeTenant({ tenantId: '3c1d2e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f', name: 'Many Sites', locationCount: 310, shiftCount: 0 });
/** A company without `shifts.read`: its shift subscriptions are refused with FORBIDDEN. */
const NO_SHIFTS = makeTenant({ tenantId: '6e7f8091-a2b3-4c4d-8e5f-6a7b8c9d0e1f', name: 'No Shifts', locationCount: 2, shiftCount: 3, grantedScopes: ['locations.read'] });
const UNKNOWN_TENANT = 'ffffffff-0000-4000-8000-00000000abcd';
const PAGE = 100;

let subgraph: TestSubgraph;

beforeAll(async () => {
  subgraph = await startTestSubgraph({ tenants: [MANY_SITES, NO_SHIFTS] }, { LOG_LEVEL: 'warn' });
});

afterAll(async () => {
  await subgraph?.close();
});

/** What the location picker hooks return. */
interface Picker {
  locations: Array<{ id: string; name: string }>;
  hasMore: boolean;
  loadMore: () => Promise<unknown>;
  error?: unknown;
}

/** The first `count` locations of a company, as the picker lists them. */
const firstLocations = (tenant: EmulatorTenant, count: number) => tenant.locations.slice(0, count).map((location) => ({ id: location.id, name: location.name }));

describe("docs/frontend.md's location picker pages, as printed", () => {
  // Apollo Client's recipes carry a bearer token, as in front of a router: a subgraph
  // on the same upstream that verifies tokens (WFS_JWKS_URL) against a real key endpoint.
  let idp: TestIdentityProvider;
  let verifying: TestSubgraph;
  beforeAll(async () => {
    idp = await startTestIdentityProvider();
    verifying = await startTestSubgraph({}, { LOG_LEVEL: 'warn', ...idp.env }, {}, subgraph.emulator);
  });
  afterAll(async () => {
    await verifying?.close();
    await idp?.close();
  });
  const token = () => idp.sign({ tenant_id: MANY_SITES.tenantId });

  /** The hook rendered with the client; two loadMore calls; three pages of distinct locations, in upstream order. */
  async function pagesThrough(client: ApolloClient, hook: () => Picker): Promise<void> {
    const picker = renderHook(hook, (children) => createElement(ApolloProvider, { client, children }));
    const shown = () => picker.current()?.locations ?? [];
    try {
      await waitFor(() => shown().length > 0, 'the first page');
      expect({ count: shown().length, hasMore: picker.current()!.hasMore, error: picker.current()!.error }).toEqual({ count: PAGE, hasMore: true, error: undefined });
      for (const pages of [2, 3]) {
        await picker.current()!.loadMore();
        await waitFor(() => shown().length >= pages * PAGE, `${pages} pages in the list`);
        expect({ pages, count: shown().length }).toEqual({ pages, count: pages * PAGE });
      }
      // Three pages' worth of distinct locations, in upstream order, and still more to load.
      expect(new Set(shown().map((location) => location.id)).size).toBe(3 * PAGE);
      expect(shown().map(({ id, name }) => ({ id, name }))).toEqual(firstLocations(MANY_SITES, 3 * PAGE));
      expect(picker.current()!.hasMore).toBe(true);
    } finally {
      picker.unmount();
      client.stop();
    }
  }

  it("Apollo Client 4 (the page's client and useLocationPicker): two loadMore calls (fetchMore) make three pages of distinct locations", async () => {
    const { client } = runBlock<{ client: ApolloClient }>(APOLLO_CLIENT, {
      replace: [
        ['https://graph.example.com/graphql', verifying.server.url],
        ["'Bearer <token>'", JSON.stringify(`Bearer ${await token()}`)],
      ],
    });
    const { useLocationPicker } = runBlock<{ useLocationPicker: () => Picker }>(APOLLO_PICKER);
    await pagesThrough(client, useLocationPicker);
  });

  it('Apollo Client 4 (examples/frontend/apollo.ts: createClient and useLocations): likewise', async () => {
    await pagesThrough(createClient(verifying.server.url, await token()), useLocations);
  });

  it("urql (Graphcache's relayPagination()): loadLocations with each page's cursor holds every location so far", async () => {
    const apiSchemaSdl = readFileSync(path.join(__dirname, '..', '..', 'schema.api.graphql'), 'utf8');
    const recipe = runBlock<{ client: UrqlClient; loadLocations: (after: string | null) => Promise<{ locations: Array<{ id: string; name: string }>; next: string | null }> }>(URQL_CLIENT, {
      replace: [['https://router.example.com/', subgraph.server.url]],
      declared: { tenantId: MANY_SITES.tenantId, apiSchemaSdl },
    });
    const first = await recipe.loadLocations(null);
    const second = await recipe.loadLocations(first.next);
    const third = await recipe.loadLocations(second.next);
    expect([first, second, third].map((page) => page.locations.length)).toEqual([PAGE, 2 * PAGE, 3 * PAGE]);
    expect(new Set(third.locations.map((location) => location.id)).size).toBe(3 * PAGE);
    expect(third.locations.map(({ id, name }) => ({ id, name }))).toEqual(firstLocations(MANY_SITES, 3 * PAGE));
    expect(third.next).not.toBeNull();
  });
});

describe("docs/frontend.md's location picker on the demo's own data, as `npm start` serves it", () => {
  let demo: Demo;
  let server: RunningServer;
  beforeAll(async () => {
    demo = await startDemo(loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn' }), {});
    const quiet = new Writable({ write: (_chunk, _encoding, callback) => callback() });
    server = await startServer(demo.config, { logger: createLogger('warn', quiet), defaultTenant: demo.defaultTenant });
  });
  afterAll(async () => {
    await server?.close();
    await demo?.emulator.close();
  });

  it("Apollo Client 4 (the page's client and useLocationPicker), on the demo company with more than 100 locations: fetchMore loads the second page", async () => {
    // The demo company that pages (Maple Ridge Grocers, 130 locations), sent in the demo's tenant header.
    const grocer = demo.emulator.tenants.find((tenant) => tenant.locations.length > PAGE)!;
    expect({ name: grocer.name, locations: grocer.locations.length }).toEqual({ name: 'Maple Ridge Grocers', locations: 130 });
    const { client } = runBlock<{ client: ApolloClient }>(APOLLO_CLIENT, {
      replace: [
        ['https://graph.example.com/graphql', server.url],
        ["authorization: 'Bearer <token>'", `${JSON.stringify(demo.config.tenantHeader)}: ${JSON.stringify(grocer.tenantId)}`],
      ],
    });
    const { useLocationPicker } = runBlock<{ useLocationPicker: () => Picker }>(APOLLO_PICKER);
    const picker = renderHook(useLocationPicker, (children) => createElement(ApolloProvider, { client, children }));
    const shown = () => picker.current()?.locations ?? [];
    try {
      await waitFor(() => shown().length > 0, 'the first page');
      expect({ count: shown().length, hasMore: picker.current()!.hasMore, error: picker.current()!.error }).toEqual({ count: PAGE, hasMore: true, error: undefined });
      await picker.current()!.loadMore();
      await waitFor(() => shown().length > PAGE, 'the second page in the list');
      // Every location of the company, in upstream order, and nothing more to load.
      expect(shown().map(({ id, name }) => ({ id, name }))).toEqual(firstLocations(grocer, grocer.locations.length));
      expect(picker.current()!.hasMore).toBe(false);
    } finally {
      picker.unmount();
      client.stop();
    }
  });
});

describe("the code of a refusal, read by the page's refusalCode from what the live recipes hand to showLiveError, and Relay to onError", () => {
  const { refusalCode, liveClose } = runBlock<RefusalHelper>(REFUSAL_HELPER);
  const urls = () => ({ http: subgraph.server.url, ws: wsUrl(subgraph.server.url) });
  let stops: Array<() => void> = [];

  afterEach(async () => {
    for (const stop of stops) stop();
    stops = [];
    await waitFor(() => subgraph.server.live.subscriptions === 0, 'the subscriptions ended');
  });

  /**
   * The errors a client handed to its error callback, once there is one: the Apollo
   * Client 4 and urql recipes' showLiveError, or Relay's onError of requestSubscription
   * on examples/relay's environment (its graphql-ws client made with the recipes' shouldRetry).
   */
  async function refusals(recipe: 'apollo' | 'urql' | 'relay', tenantId: string): Promise<Error[]> {
    const errors: Error[] = [];
    if (recipe === 'apollo') {
      const run = runRecipe<ApolloRecipe>(APOLLO_RECIPE, urls(), tenantId, (error) => errors.push(error));
      stops.push(run.stopLive, () => run.liveClient.stop());
    } else if (recipe === 'urql') {
      const run = runRecipe<UrqlRecipe>(URQL_RECIPE, urls(), tenantId, (error) => errors.push(error));
      stops.push(run.stopLive);
    } else {
      const headers = { 'x-tenant-id': tenantId };
      const live = createWsClient({
        url: urls().ws,
        connectionParams: { headers },
        shouldRetry: (event) => typeof (event as CloseEvent | null)?.code === 'number' && (event as CloseEvent).code !== 4403,
      });
      const environment = createTenantEnvironment({ url: urls().http, headers, live });
      const subscription = requestSubscription(environment, { subscription: ShiftChangesSubscription, variables: {}, updater: shiftChangesUpdater, onError: (error) => errors.push(error) });
      stops.push(() => subscription.dispose(), () => void live.dispose());
    }
    await waitFor(() => errors.length >= 1, `${recipe}'s error callback`);
    return errors;
  }
  const clients = ['apollo', 'urql', 'relay'] as const;

  it.each(clients)('%s: no tenant at all, the socket closed with 4403, reads as UNAUTHENTICATED', async (recipe) => {
    const [error] = await refusals(recipe, '');
    expect(refusalCode(error)).toBe('UNAUTHENTICATED');
    expect(liveClose(error)).toEqual({ code: 4403, reason: expect.stringMatching(/^UNAUTHENTICATED: ./) });
  });

  it.each(clients)('%s: a company this subgraph does not serve, the socket closed with 4403, reads as FORBIDDEN', async (recipe) => {
    const [error] = await refusals(recipe, UNKNOWN_TENANT);
    expect(refusalCode(error)).toBe('FORBIDDEN');
    expect(liveClose(error)).toEqual({ code: 4403, reason: expect.stringMatching(/^FORBIDDEN: ./) });
  });

  it.each(clients)('%s: a subscription refused for its scope (a GraphQL error, no close) reads as FORBIDDEN', async (recipe) => {
    const errors = await refusals(recipe, NO_SHIFTS.tenantId);
    // (Graphcache may hand the same errored result on more than once.)
    expect(errors.map((error) => refusalCode(error))).toEqual(errors.map(() => 'FORBIDDEN'));
    expect(liveClose(errors[0])).toBeUndefined();
  });

  it('reads nothing from what is no refusal: a dropped connection, a close of another code, an error of another kind', () => {
    expect(refusalCode(new Error('Socket closed with event 1006 '))).toBeUndefined();
    expect(refusalCode({ networkError: { code: 1008, reason: 'too many messages' } })).toBeUndefined();
    expect(liveClose({ networkError: { code: 1008, reason: 'too many messages' } })).toEqual({ code: 1008, reason: 'too many messages' });
    expect(refusalCode(new TypeError('Failed to fetch'))).toBeUndefined();
    expect(refusalCode(undefined)).toBeUndefined();
  });
});
