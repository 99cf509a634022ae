import { request } from 'undici';
import { startPeopleSubgraph, type RunningPeopleSubgraph } from '../../examples/people-subgraph/server';
import { startTestIdentityProvider, type TestIdentityProvider } from '../helpers/jwks';
import { as, freePort, gatewayTenants, testTenant } from '../helpers/fixtures';
import { HIVE_ROUTER_SECRET as ROUTER_SECRET, startHiveGateway, type GatewayResult as Result, type RunningGateway } from '../helpers/hiveGateway';
import { livePolls, startTestSubgraph, subscribedAndPolled, TEST_CURSOR_SECRET, type TestSubgraph } from '../helpers/subgraph';
import { waitFor } from '../helpers/waitFor';
import { parseSamples, scrapeText, scrapeTotal, total } from '../helpers/metrics';
import { InvalidationSender, type InvalidationOutcome } from '../../src/cache/invalidation';
import { CacheTags } from '../../src/cache/tags';
import { RESOURCES } from '../../src/upstream/resources';
import { LIST_TYPES } from '../../router/hiveResponseCache';
import { ApolloClient, HttpLink, InMemoryCache, gql as apolloGql, split } from '@apollo/client';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { getMainDefinition } from '@apollo/client/utilities';
import { Client as UrqlClient, fetchExchange, gql as urqlGql, subscriptionExchange } from '@urql/core';
import { cacheExchange } from '@urql/exchange-graphcache';
import { createClient, type Client } from 'graphql-ws';
import { requestSubscription, type Environment } from 'relay-runtime';
import ShiftChangesSubscription from '../../examples/relay/src/__generated__/ShiftChangesSubscription.graphql';
import { createTenantEnvironment } from '../../examples/relay/src/environment';
import { shiftChangesUpdater } from '../../examples/relay/src/liveUpdates';
import { encodeNodeId } from '../../src/graphql/data/node';
import { editShiftEnd, relayKeepsRotaCurrent } from '../helpers/relayLive';
import { wsUrl } from '../helpers/liveClient';
import { APOLLO_RECIPE as APOLLO, URQL_RECIPE as URQL, runRecipe, type ApolloRecipe, type RecipeRota as Rota, type UrqlRecipe } from '../helpers/liveRecipes';

/**
 * Hive Gateway as the second gateway: `@graphql-hive/gateway` runs the committed
 * `supergraph.graphql` with the committed `router/gateway.config.ts` (only the
 * subgraph locations and the secret come from the test), over real HTTP on loopback,
 * in front of our subgraph on the emulator and the example people subgraph
 * (test/helpers/hiveGateway.ts). One stack, started once, serves every suite of this file:
 *
 * - the gateway itself: live updates over SSE, joins across both subgraphs, error codes
 *   and partial data, the router secret, the people subgraph down, verified identity (JWT);
 * - its response cache, as router/gateway.config.ts sets it up: per company, fail-closed,
 *   told by our subgraph's invalidation client (the subgraph runs with a freshness window);
 * - the frontends' clients (Apollo Client, urql, Relay) on a live rota through it;
 * - docs/frontend.md's "Live updates" recipes, run as the page prints them
 *   (test/helpers/liveRecipes.ts), through it; and, against a subgraph of their own that
 *   serves clients directly (no router secret), a refused identity (close 4403).
 */

// NO_SHIFTS (no `shifts.read`) serves the gateway suites and the recipes' refused subscription alike.
const { withShifts: WITH_SHIFTS, other: OTHER, noShifts: NO_SHIFTS } = gatewayTenants();
/** A company whose grant the live suite withdraws while it is subscribed. */
const WITHDRAWN = testTenant('c', { locations: 2, shifts: 4, scopes: ['shifts.read'] });
/** The recipes' partial page: a company of 120 shifts, the rota's first 100. */
const PARTIAL = testTenant('a', { locations: 4, shifts: 120, scopes: ['shifts.read'] });
/** The recipes' whole list: 20 shifts. */
const WHOLE = testTenant('b', { locations: 3, shifts: 20, scopes: ['shifts.read'] });
/** The paging suite's company: 400 shifts, read 100 at a time with their users. */
const PAGED = testTenant('g', { locations: 4, shifts: 400, scopes: ['shifts.read'] });
const UNKNOWN_TENANT = 'ffffffff-0000-4000-8000-00000000abcd';
/** The key our subgraph would send the gateway's /invalidation (WFS_CACHE_INVALIDATION_KEY on both). */
const INVALIDATION_KEY = 'invalidation-key-for-the-hive-gateway-test-0123456789';

const ids = (nodes: Array<{ id: string }> | undefined) => nodes?.map((node) => node.id);
const codes = (result: Result) => result.errors?.map((error) => ({ path: error.path, code: error.extensions?.code }));

// One stack for every suite of this file: the subgraph (on the emulator; WITH_SHIFTS
// first, the company the live suites edit as `tenants[0]`), the people subgraph and
// Hive Gateway in front of them, started once.
let subgraph: TestSubgraph;
let people: RunningPeopleSubgraph;
let gateway: RunningGateway;
/** The live polls our subgraph finished: subscribedAndPolled(subgraph.server, since) waits for the gateway's subscription and a poll after `since`. */
const polls = () => livePolls(subgraph.server);

beforeAll(async () => {
  subgraph = await startTestSubgraph(
    { tenants: [WITH_SHIFTS, OTHER, NO_SHIFTS, WITHDRAWN, PARTIAL, WHOLE, PAGED] },
    // A freshness window, so answers say `private, max-age=N` and the gateway's response
    // cache keeps them (its own suite below); 30 s outlasts the suite's reads of one query.
    { WFS_ROUTER_SECRET: ROUTER_SECRET, LOG_LEVEL: 'warn', WFS_FRESHNESS_SECONDS: '30' },
    { live: { pollIntervalMs: 100 } },
  );
  people = await startPeopleSubgraph();
  gateway = await startHiveGateway({ wfs: subgraph.server.url, people: people.url }, ROUTER_SECRET, { WFS_CACHE_INVALIDATION_KEY: INVALIDATION_KEY });
  // A gateway in service has answered a request before (the runtime this helper builds
  // loads the supergraph on its first HTTP request; a graphql-ws subscription that
  // comes first is answered "Unexpected error."), and each recipe subscribes at once.
  expect(await gateway.query('{ __typename }', {})).toEqual({ data: { __typename: 'Query' } });
});

afterAll(async () => {
  await gateway?.close();
  await people?.close();
  await subgraph?.close();
});

describe('Hive Gateway in front of the subgraph and the people subgraph', () => {

  it('carries a live update: a shift changed upstream reaches a subscriber through the gateway, joined with people fields', async () => {
    const events: any[] = [];
    const controller = new AbortController();
    // Server-Sent Events from the gateway (GraphQL over SSE, distinct connections mode);
    // the gateway subscribes to our subgraph over graphql-ws.
    const response = await request(gateway.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...as(WITH_SHIFTS) },
      body: JSON.stringify({ query: 'subscription { shiftChanges { kind nodeId shift { id end location { name headcount } } } }' }),
      signal: controller.signal,
    });
    expect(response.statusCode).toBe(200);
    const reading = (async () => {
      let buffer = '';
      for await (const chunk of response.body) {
        buffer += String(chunk);
        for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = block.split('\n').find((line) => line.startsWith('data:'));
          if (block.includes('event: next') && data) events.push(JSON.parse(data.slice(5)));
        }
      }
    })().catch(() => undefined);
    try {
      await waitFor(() => subgraph.server.live.subscriptions === 1, 'the gateway subscribed to our subgraph');
      await waitFor(async () => (await livePolls(subgraph.server)) >= 1, 'the baseline poll');
      const shift = subgraph.emulator.tenants[0]!.shifts[2]!;
      shift.end = shift.end.replace(/:00([+-])/, ':30$1');
      await waitFor(() => events.length >= 1, 'the change through the gateway', 30_000);
      expect(events[0]).toEqual({
        data: { shiftChanges: { kind: 'UPDATED', nodeId: expect.any(String), shift: { id: shift.id, end: shift.end, location: { name: expect.any(String), headcount: expect.any(Number) } } } },
      });
    } finally {
      controller.abort();
      await reading;
    }
    await waitFor(() => subgraph.server.live.subscriptions === 0, 'the gateway ended its subscription');
  });

  it('joins across both subgraphs for the tenant the header names', async () => {
    for (const tenant of [WITH_SHIFTS, OTHER]) {
      const result = await gateway.query(
        '{ shifts(first: 5) { nodes { id location { id name headcount manager { name } } user { id name } notes } } people(first: 2) { nodes { name } } }',
        as(tenant),
      );
      expect(result.errors).toBeUndefined();
      const nodes = result.data?.['shifts'].nodes as any[];
      expect(ids(nodes)).toEqual(tenant.shifts.slice(0, 5).map((shift) => shift.id));
      const names = new Map(tenant.locations.map((location) => [location.id, location.name]));
      nodes.forEach((node, index) => {
        const upstream = tenant.shifts[index]!;
        expect(node.location).toEqual({ id: upstream.location, name: names.get(upstream.location), headcount: expect.any(Number), manager: { name: expect.any(String) } });
        expect(node.user).toEqual(upstream.user === null ? null : { id: upstream.user, name: expect.any(String) });
      });
      expect(result.data?.['people'].nodes).toHaveLength(2);
    }
  });

  it('keeps error codes and partial data: FORBIDDEN shifts beside served locations and people', async () => {
    const result = await gateway.query('{ locations(first: 2) { nodes { name headcount } } shifts(first: 2) { nodes { id } } people(first: 1) { nodes { name } } }', as(NO_SHIFTS));
    expect(result.data?.['locations'].nodes).toEqual(NO_SHIFTS.locations.slice(0, 2).map((location) => ({ name: location.name, headcount: expect.any(Number) })));
    expect(result.data?.['people'].nodes).toHaveLength(1);
    expect(result.data?.['shifts']).toBeNull();
    expect(codes(result)).toEqual([{ path: ['shifts'], code: 'FORBIDDEN' }]);
  });

  it('passes BAD_USER_INPUT through with its path', async () => {
    const result = await gateway.query('{ locations(first: 0) { nodes { id } } people(first: 1) { nodes { name } } }', as(WITH_SHIFTS));
    expect(result.data?.['locations']).toBeNull();
    expect(result.data?.['people'].nodes).toHaveLength(1);
    expect(codes(result)).toEqual([{ path: ['locations'], code: 'BAD_USER_INPUT' }]);
  });

  it('is refused by our subgraph when the gateway does not send the router secret', async () => {
    const wrong = await startHiveGateway({ wfs: subgraph.server.url, people: people.url }, 'not-the-router-secret-0123');
    try {
      const result = await wrong.query('{ locations(first: 1) { nodes { name } } people(first: 1) { nodes { name } } }', as(WITH_SHIFTS));
      expect(result.data?.['locations']).toBeNull();
      expect(result.data?.['people'].nodes).toHaveLength(1);
      expect(result.errors?.map((error) => error.extensions?.code)).toContain('UNAUTHENTICATED');
    } finally {
      await wrong.close();
    }
  });

  /**
   * The people subgraph stopped: its fields on our entities are nullable, so the
   * gateway still serves our data and reports an error only at those fields.
   */
  it('serves our data when the people subgraph is down, with errors only for its fields', async () => {
    const doomed = await startPeopleSubgraph();
    const partial = await startHiveGateway({ wfs: subgraph.server.url, people: doomed.url }, ROUTER_SECRET);
    try {
      const before = await partial.query('{ locations(first: 3) { nodes { id name headcount } } }', as(WITH_SHIFTS));
      expect(before.errors).toBeUndefined();
      await doomed.close();
      const result = await partial.query('{ locations(first: 3) { nodes { id name headcount } } shifts(first: 2) { nodes { id notes } } }', as(WITH_SHIFTS));
      expect(result.data?.['locations'].nodes).toEqual(WITH_SHIFTS.locations.slice(0, 3).map((location) => ({ id: location.id, name: location.name, headcount: null })));
      expect(ids(result.data?.['shifts'].nodes)).toEqual(WITH_SHIFTS.shifts.slice(0, 2).map((shift) => shift.id));
      // Errors only at the people fields (Hive Gateway reports a list field's path without item indexes).
      const where = new Set(result.errors?.map((error) => (error.path ?? []).filter((segment) => typeof segment === 'string').join('.')));
      expect([...where].sort()).toEqual(['locations.nodes.headcount', 'shifts.nodes.notes']);
    } finally {
      await partial.close();
    }
  });

  describe('in verified-identity mode (JWT)', () => {
    let idp: TestIdentityProvider;
    let jwtSubgraph: TestSubgraph;
    let jwtGateway: RunningGateway;

    beforeAll(async () => {
      idp = await startTestIdentityProvider();
      jwtSubgraph = await startTestSubgraph({}, { WFS_ROUTER_SECRET: ROUTER_SECRET, ...idp.env }, {}, subgraph.emulator);
      // The gateway with the subgraph's identity settings, as a deployment gives both.
      jwtGateway = await startHiveGateway({ wfs: jwtSubgraph.server.url, people: people.url }, ROUTER_SECRET, idp.env);
    });

    afterAll(async () => {
      await jwtGateway?.close();
      await jwtSubgraph?.close();
      await idp?.close();
    });

    it("serves the verified token's tenant, ignoring the tenant header beside it, joined with people fields", async () => {
      const authorization = `Bearer ${await idp.sign({ tenant_id: OTHER.tenantId })}`;
      const result = await jwtGateway.query('{ locations(first: 100) { nodes { id headcount } } }', { authorization, ...as(WITH_SHIFTS) });
      expect(result.errors).toBeUndefined();
      expect(ids(result.data?.['locations'].nodes)).toEqual(OTHER.locations.map((location) => location.id));
      for (const node of result.data?.['locations'].nodes as any[]) expect(node.headcount).toEqual(expect.any(Number));
    });

    it('answers a missing or forged token with UNAUTHENTICATED on our fields while the people fields resolve', async () => {
      for (const headers of [as(WITH_SHIFTS), { authorization: `Bearer ${await idp.signWithUnpublishedKey({ tenant_id: WITH_SHIFTS.tenantId })}` }]) {
        const result = await jwtGateway.query('{ locations(first: 2) { nodes { id } } people(first: 2) { nodes { name } } }', headers);
        expect(result.data?.['locations']).toBeNull();
        expect(result.data?.['people'].nodes).toHaveLength(2);
        expect(codes(result)).toEqual([{ path: ['locations'], code: 'UNAUTHENTICATED' }]);
      }
    });
  });
});

/**
 * router/gateway.config.ts's response cache (docs/caching.md, "Hive Gateway's response
 * cache") through the real runtime, on the shared stack, whose subgraph answers
 * `private, max-age=<what is left of WFS_FRESHNESS_SECONDS>`: an entry per company, none
 * for a request naming no company, and our subgraph's invalidation client
 * (src/cache/invalidation.ts) heard at the gateway's /invalidation. A hit is counted as a
 * request the subgraph did not get (wfs_graphql_requests_total): its own kept pages
 * would spare the upstream call either way. A query of its own, read by no other test.
 */
describe("Hive Gateway's response cache, per company, fail-closed, told by our invalidations", () => {
  const PROBE = 'query GatewayCacheProbe { shifts(first: 3) { nodes { id } } }';
  const subgraphRequests = async () => total(parseSamples(await scrapeText(subgraph.server.url)), 'wfs_graphql_requests_total');
  const read = async (tenant: { tenantId: string }) => {
    const result = await gateway.query(PROBE, as(tenant));
    expect(result.errors).toBeUndefined();
    return ids(result.data?.['shifts'].nodes);
  };
  /** Our subgraph's own client, pointed at the gateway, with `key`; resolves to the POST's outcome. */
  const invalidate = async (key: string, tag: string) => {
    const outcomes: InvalidationOutcome[] = [];
    const sender = new InvalidationSender({ urls: [new URL('/invalidation', gateway.url).href], key, onOutcome: (outcome) => outcomes.push(outcome), attempts: 1 });
    sender.invalidate([tag]);
    await sender.settled();
    return outcomes;
  };
  const tags = new CacheTags(Buffer.from(TEST_CURSOR_SECRET, 'utf8'));

  it('serves a second read from the cache (the subgraph not asked), and another company its own answer', async () => {
    const first = await subgraphRequests();
    expect(await read(WITH_SHIFTS)).toEqual(WITH_SHIFTS.shifts.slice(0, 3).map((shift) => shift.id));
    expect(await subgraphRequests()).toBe(first + 1);
    expect(await read(WITH_SHIFTS)).toEqual(WITH_SHIFTS.shifts.slice(0, 3).map((shift) => shift.id));
    expect(await subgraphRequests()).toBe(first + 1);
    // Company B, the same query after A's answer is kept: B's own answer, from the subgraph.
    const otherIds = OTHER.shifts.slice(0, 3).map((shift) => shift.id);
    expect(otherIds).not.toEqual(WITH_SHIFTS.shifts.slice(0, 3).map((shift) => shift.id));
    expect(await read(OTHER)).toEqual(otherIds);
    expect(await subgraphRequests()).toBe(first + 2);
    expect(await read(OTHER)).toEqual(otherIds);
    expect(await subgraphRequests()).toBe(first + 2);
  });

  it('never caches a request that names no company (no shared entry), while it does one that names a company', async () => {
    // `{ __typename }` asks no subgraph, so nothing but the session decides: stored, it
    // would carry the entry's ETag, and a read with If-None-Match would get a 304.
    const post = (headers: Record<string, string>) =>
      request(gateway.url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', ...headers }, body: JSON.stringify({ query: '{ __typename }' }) });
    const kept = await post(as(WITH_SHIFTS));
    await kept.body.dump();
    const etag = kept.headers['etag'];
    expect(typeof etag).toBe('string');
    const revalidated = await post({ ...as(WITH_SHIFTS), 'if-none-match': etag as string });
    await revalidated.body.dump();
    expect(revalidated.statusCode).toBe(304);

    for (let attempt = 0; attempt < 2; attempt++) {
      const anonymous = await post({});
      expect(await anonymous.body.json()).toEqual({ data: { __typename: 'Query' } });
      expect(anonymous.headers['etag']).toBeUndefined();
    }
    // Not even under the ETag a company's entry has.
    const guessed = await post({ 'if-none-match': etag as string });
    expect(guessed.statusCode).toBe(200);
    await guessed.body.dump();
  });

  it('keeps no response that used a subgraph answer without a max-age (the people subgraph sends none; our no-store alike)', async () => {
    // Hive would keep it for its own TTL (300 s): the ETag it names is not stored.
    const post = (headers: Record<string, string>) =>
      request(gateway.url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', ...as(WITH_SHIFTS), ...headers }, body: JSON.stringify({ query: 'query GatewayCachePeople { people(first: 2) { nodes { name } } }' }) });
    const first = await post({});
    expect(((await first.body.json()) as Result).data?.['people'].nodes).toHaveLength(2);
    const etag = first.headers['etag'];
    const again = await post(typeof etag === 'string' ? { 'if-none-match': etag } : {});
    expect(again.statusCode).toBe(200);
    expect(((await again.body.json()) as Result).data?.['people'].nodes).toHaveLength(2);
  });

  it('keeps none of such responses either when identical requests arrive together (no request shares another subgraph fetch, whose max-age it would not see)', async () => {
    // Shared in flight, only the request that made the fetch heard its Cache-Control; the
    // others were stored for Hive's own TTL (300 s). Several at once, so some overlap.
    const post = (headers: Record<string, string>) =>
      request(gateway.url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', ...as(WITH_SHIFTS), ...headers }, body: JSON.stringify({ query: 'query GatewayCacheTogether { people(first: 3) { nodes { name } } }' }) });
    const together = await Promise.all(Array.from({ length: 6 }, () => post({})));
    const etags = new Set<string>();
    for (const response of together) {
      expect(((await response.body.json()) as Result).data?.['people'].nodes).toHaveLength(3);
      if (typeof response.headers['etag'] === 'string') etags.add(response.headers['etag']);
    }
    expect(etags.size).toBeGreaterThan(0);
    for (const etag of etags) {
      const again = await post({ 'if-none-match': etag });
      expect(again.statusCode).toBe(200);
      await again.body.dump();
    }
  });

  it("applies our subgraph's invalidation POST (Apollo Router's format, the key in Authorization): the next read goes to the subgraph; refused without the key", async () => {
    // A list's tag drops the answers that carried it (router/hiveResponseCache.ts), so
    // the read after it goes to the subgraph.
    await read(WITH_SHIFTS);
    const kept = await subgraphRequests();
    expect(await read(WITH_SHIFTS)).toHaveLength(3);
    expect(await subgraphRequests()).toBe(kept);

    expect(await invalidate('not-the-key', tags.list(WITH_SHIFTS.tenantId, 'shifts'))).toEqual(['rejected']);
    await read(WITH_SHIFTS);
    expect(await subgraphRequests()).toBe(kept);

    expect(await invalidate(INVALIDATION_KEY, tags.list(WITH_SHIFTS.tenantId, 'shifts'))).toEqual(['sent']);
    expect(await read(WITH_SHIFTS)).toEqual(WITH_SHIFTS.shifts.slice(0, 3).map((shift) => shift.id));
    expect(await subgraphRequests()).toBe(kept + 1);
    await read(WITH_SHIFTS);
    expect(await subgraphRequests()).toBe(kept + 1);

    // A record's tag names a list; the endpoint knows the type of each of ours.
    expect(LIST_TYPES).toEqual(Object.fromEntries(RESOURCES.map((resource) => [resource.name, resource.typename])));
    // A record's tag drops the entries holding that record, and only those: OTHER's answer,
    // kept too, holds none of WITH_SHIFTS's shifts and is still served from the cache.
    await read(OTHER);
    const both = await subgraphRequests();
    expect(await invalidate(INVALIDATION_KEY, tags.record(WITH_SHIFTS.tenantId, 'shifts', WITH_SHIFTS.shifts[1]!.id))).toEqual(['sent']);
    await read(OTHER);
    expect(await subgraphRequests()).toBe(both);
    expect(await read(WITH_SHIFTS)).toEqual(WITH_SHIFTS.shifts.slice(0, 3).map((shift) => shift.id));
    expect(await subgraphRequests()).toBe(both + 1);
  });
});

/**
 * The edges of that cache as a deployment meets them (router/gateway.config.ts with the
 * subgraph's own settings): a renamed tenant header, companies behind one shared
 * `Authorization`, one company's edit told by the subgraph's own invalidations, and a
 * paging load that must fit the cache's bound.
 *
 * A second pair on the shared emulator: a subgraph with `WFS_TENANT_HEADER=x-company`
 * that POSTs its invalidations to a gateway given the same header, whose port is chosen
 * first; its cache holds 1,000 keys (HIVE_RESPONSE_CACHE_MAX_KEYS: what Hive's default
 * cache held), for the paging test's word about evictions. The paging itself is read
 * through the shared gateway, at the shipped bound.
 */
describe("Hive Gateway's response cache at its edges: the subgraph's settings, one company's edit, a paging load", () => {
  const HEADER = 'x-company';
  const PROBE = 'query GatewayEdgesProbe { shifts(first: 3) { nodes { id end } } }';
  let renamed: TestSubgraph;
  let renamedGateway: RunningGateway;
  const asCompany = (tenant: { tenantId: string }, extra: Record<string, string> = {}) => ({ [HEADER]: tenant.tenantId, ...extra });
  const requestsTo = async (server: TestSubgraph) => total(parseSamples(await scrapeText(server.server.url)), 'wfs_graphql_requests_total');
  const probe = async (tenant: { tenantId: string }, extra: Record<string, string> = {}) => {
    const result = await renamedGateway.query(PROBE, asCompany(tenant, extra));
    expect(result.errors).toBeUndefined();
    return result.data?.['shifts'].nodes as Array<{ id: string; end: string }>;
  };
  const firstThree = (tenant: { shifts: Array<{ id: string; end: string }> }) => tenant.shifts.slice(0, 3).map(({ id, end }) => ({ id, end }));

  beforeAll(async () => {
    const port = await freePort();
    renamed = await startTestSubgraph(
      {},
      {
        WFS_ROUTER_SECRET: ROUTER_SECRET,
        LOG_LEVEL: 'warn',
        WFS_FRESHNESS_SECONDS: '60',
        WFS_TENANT_HEADER: HEADER,
        WFS_CACHE_INVALIDATION_URLS: `http://127.0.0.1:${port}/invalidation`,
        WFS_CACHE_INVALIDATION_KEY: INVALIDATION_KEY,
      },
      { live: { pollIntervalMs: 100 } },
      subgraph.emulator,
    );
    renamedGateway = await startHiveGateway(
      { wfs: renamed.server.url, people: people.url },
      ROUTER_SECRET,
      { WFS_TENANT_HEADER: HEADER, WFS_CACHE_INVALIDATION_KEY: INVALIDATION_KEY, HIVE_RESPONSE_CACHE_MAX_KEYS: '1000' },
      port,
    );
    expect(await renamedGateway.query('{ __typename }', {})).toEqual({ data: { __typename: 'Query' } });
  });

  afterAll(async () => {
    await renamed?.close();
    await renamedGateway?.close();
  });

  it('with a renamed tenant header, serves each company its own answer, and the second read of each from the cache', async () => {
    const before = await requestsTo(renamed);
    for (const tenant of [WITH_SHIFTS, OTHER]) expect(await probe(tenant)).toEqual(firstThree(tenant));
    expect(await requestsTo(renamed)).toBe(before + 2);
    for (const tenant of [WITH_SHIFTS, OTHER]) expect(await probe(tenant)).toEqual(firstThree(tenant));
    expect(await requestsTo(renamed)).toBe(before + 2);
  });

  it('serves two companies behind one Authorization (a service token) their own answers', async () => {
    const service = { authorization: 'Bearer one-service-token-for-every-company' };
    const before = await requestsTo(renamed);
    expect(await probe(OTHER, service)).toEqual(firstThree(OTHER));
    // The same query and Authorization, another company: its own answer, from the subgraph.
    expect(await probe(WITH_SHIFTS, service)).toEqual(firstThree(WITH_SHIFTS));
    expect(await requestsTo(renamed)).toBe(before + 2);
    expect(await probe(OTHER, service)).toEqual(firstThree(OTHER));
    expect(await probe(WITH_SHIFTS, service)).toEqual(firstThree(WITH_SHIFTS));
    expect(await requestsTo(renamed)).toBe(before + 2);
  });

  it("drops only the edited company's answers when the subgraph's poll sees its edit: another company's stay cached", async () => {
    const edited = subgraph.emulator.tenants.find((tenant) => tenant.tenantId === PAGED.tenantId)!;
    const kept = OTHER;
    for (const tenant of [edited, kept]) await probe(tenant);
    const cached = await requestsTo(renamed);
    for (const tenant of [edited, kept]) await probe(tenant);
    expect(await requestsTo(renamed)).toBe(cached);

    // A subscriber keeps the edited company's shifts polled (through the gateway, over SSE).
    const controller = new AbortController();
    const since = await livePolls(renamed.server);
    const response = await request(renamedGateway.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...asCompany(edited) },
      body: JSON.stringify({ query: 'subscription { shiftChanges { kind nodeId } }' }),
      signal: controller.signal,
    });
    const reading = (async () => {
      for await (const chunk of response.body) void chunk;
    })().catch(() => undefined);
    try {
      await subscribedAndPolled(renamed.server, since);
      const sent = await scrapeTotal(renamed.server.url, 'wfs_cache_invalidations_total', { outcome: 'sent' });
      const end = editShiftEnd(edited.shifts[0]!);
      await waitFor(async () => (await scrapeTotal(renamed.server.url, 'wfs_cache_invalidations_total', { outcome: 'sent' })) > sent, 'the invalidation POSTed to the gateway');
      // The other company's answer: still the gateway's.
      const hits = renamedGateway.cache.stats.hits;
      const before = await requestsTo(renamed);
      expect(await probe(kept)).toEqual(firstThree(kept));
      expect(await requestsTo(renamed)).toBe(before);
      expect(renamedGateway.cache.stats.hits).toBe(hits + 1);
      // The edited company's: asked again, with the edit.
      expect((await probe(edited))[0]).toEqual({ id: edited.shifts[0]!.id, end });
      expect(await requestsTo(renamed)).toBe(before + 1);
    } finally {
      controller.abort();
      await reading;
    }
    await waitFor(() => renamed.server.live.subscriptions === 0, 'the gateway ended its subscription');
  });

  /** `pages` pages of 100 of PAGED's shifts with their users, read through `through`, `rounds` times over; resolves to the subgraph requests they made. */
  const page = (after: string | null) => `query GatewayPaging { shifts(first: 100${after ? `, after: ${JSON.stringify(after)}` : ''}) { nodes { id user { id } } pageInfo { endCursor } } }`;
  const readPages = async (through: RunningGateway, server: TestSubgraph, headers: Record<string, string>, rounds: number) => {
    const before = await requestsTo(server);
    for (let round = 0; round < rounds; round++) {
      let after: string | null = null;
      for (let index = 0; index < 4; index++) {
        const result = await through.query(page(after), headers);
        expect(result.errors).toBeUndefined();
        const shifts = result.data?.['shifts'] as { nodes: Array<{ id: string }>; pageInfo: { endCursor: string } };
        expect(shifts.nodes.map((node) => node.id)).toEqual(PAGED.shifts.slice(index * 100, index * 100 + 100).map((shift) => shift.id));
        after = shifts.pageInfo.endCursor;
      }
    }
    return (await requestsTo(server)) - before;
  };

  it('pages through 4 x 100 shifts with their users again and again from the cache, at the shipped bound', async () => {
    // 100 shifts and their 25 users: 1 + 2 x 125 = 251 keys a page, 1,004 for the four.
    const evicted = gateway.cache.stats.evictedUnread;
    expect(await readPages(gateway, subgraph, as(PAGED), 6)).toBe(4);
    expect(gateway.cache.stats.evictedUnread).toBe(evicted);
    expect(gateway.cacheLog).toEqual([]);
  });

  it('says so when its bound is too small for that load (1,000 keys, what Hive held by default)', async () => {
    expect(await readPages(renamedGateway, renamed, asCompany(PAGED), 3)).toBe(12);
    // 12 answers stored, 3 fit: 9 or more evicted before a read found them (every read missed).
    expect(renamedGateway.cache.stats.evictedUnread).toBeGreaterThanOrEqual(9);
    expect(renamedGateway.cacheLog).toEqual([expect.stringMatching(/^response cache: 1 answer\(s\) evicted before any read found them \(bound 1000 keys, 1 since start\); raise HIVE_RESPONSE_CACHE_MAX_KEYS/)]);
    expect(renamedGateway.cache.size).toBeLessThanOrEqual(1000);
  });
});


/**
 * The frontends' clients on a live rota through Hive Gateway (the committed
 * router/gateway.config.ts, test/helpers/hiveGateway.ts), as the README's recipes
 * set them up: queries over HTTP, subscriptions over graphql-ws to the gateway with the
 * identity in `connectionParams` (Node's built-in WebSocket, which like a browser's
 * cannot set upgrade headers), and the gateway subscribing to our subgraph over
 * graphql-ws. A shift changed in the emulator must land in each client's store, joined
 * with the people subgraph's `headcount`, with no refetch: Apollo Client 4
 * (subscribeToMore on the rota query), urql with Graphcache, relay-runtime
 * (requestSubscription with examples/relay's updater keyed by nodeId).
 */

const TENANT = WITH_SHIFTS;

const ROTA = 'query Rota { shifts(first: 100) { nodes { id nodeId end location { id name headcount } } } }';
const CHANGES = 'subscription RotaChanges { shiftChanges { kind nodeId shift { id nodeId end location { id name headcount } } } }';

interface RotaShift {
  id: string;
  nodeId: string;
  end: string;
  location: { id: string; name: string; headcount: number | null } | null;
}
interface RotaData {
  shifts: { nodes: RotaShift[] } | null;
}
interface ChangeData {
  shiftChanges: { kind: 'ADDED' | 'UPDATED' | 'REMOVED'; nodeId: string; shift: RotaShift | null };
}

describe('live rota through Hive Gateway in Apollo Client, urql and Relay', () => {
  let sockets: Client[] = [];
  let fetches = 0;

  beforeEach(() => {
    fetches = 0;
  });
  afterEach(async () => {
    await Promise.all(sockets.map((socket) => socket.dispose()));
    sockets = [];
    await waitFor(() => subgraph.server.live.subscriptions === 0, 'the gateway ended its subscription');
  });
  /** graphql-ws to the gateway, the identity as connectionParams (Hive Gateway reads them as headers). */
  const gatewaySocket = (connectionParams: Record<string, string> = as(TENANT)) => {
    const socket = createClient({ url: wsUrl(gateway.url), connectionParams, retryAttempts: 0, shouldRetry: () => false });
    sockets.push(socket);
    return socket;
  };
  const countingFetch: typeof fetch = (input, init) => {
    fetches += 1;
    return fetch(input, init);
  };
  const shifts = () => subgraph.emulator.tenants[0]!.shifts;

  it('Apollo Client 4: every refusal (unknown tenant, no tenant, over cost, invalid document, withdrawn grant) reaches the error sink with its code and message', async () => {
    /**
     * A subscription through the gateway in Apollo Client 4, which hands a result's
     * GraphQL errors to the subscriber as its `error` (CombinedGraphQLErrors); resolves
     * with those errors, or what the observable's error callback got.
     */
    type Refusal = Array<{ message: string; extensions?: { code?: string; [key: string]: unknown } }>;
    const refusalOf = (connectionParams: Record<string, string>, query: string, whileOpen?: () => void) => {
      const client = new ApolloClient({ link: new GraphQLWsLink(gatewaySocket(connectionParams)), cache: new InMemoryCache() });
      let subscription: { unsubscribe(): void } | undefined;
      return new Promise<Refusal>((resolve, reject) => {
        subscription = client.subscribe({ query: apolloGql(query) }).subscribe({
          next: (result) => void (result.error && resolve(((result.error as { errors?: unknown }).errors ?? [result.error]) as Refusal)),
          error: (error: unknown) => resolve(((error as { errors?: unknown }).errors ?? [error]) as Refusal),
          complete: () => reject(new Error(`${query}: completed without an error`)),
        });
        if (whileOpen) waitFor(() => subgraph.server.live.subscriptions === 1, 'subscribed').then(whileOpen, reject);
      }).finally(() => {
        subscription?.unsubscribe();
        client.stop();
      });
    };
    const heavy = 'subscription { shiftChanges { shift { location { shifts(first: 100) { nodes { location { shifts(first: 100) { nodes { location { shifts(first: 100) { nodes { id } } } } } } } } } } } }';
    const deep = 'subscription { shiftChanges { shift { location { shifts(first: 1) { nodes { location { shifts(first: 1) { nodes { location { shifts(first: 1) { nodes { location { name } } } } } } } } } } } } }';
    const withdraw = () => {
      const company = subgraph.emulator.tenants.find((tenant) => tenant.tenantId === WITHDRAWN.tenantId)!;
      company.grantedScopes = ['locations.read'];
      subgraph.emulator.revokeTokens(company.tenantId);
    };
    const cases: Array<[string, Record<string, string>, string, RegExp, RegExp, (() => void)?]> = [
      ['unknown tenant', { 'x-tenant-id': 'no-such-company' }, CHANGES, /^FORBIDDEN$/, /not configured on this subgraph/],
      ['no tenant', {}, CHANGES, /^UNAUTHENTICATED$/, /x-tenant-id/],
      ['over cost', as(TENANT), heavy, /^GRAPHQL_VALIDATION_FAILED$/, /estimated at \d+ .* at most 50000/],
      ['invalid document (deeper than the depth limit)', as(TENANT), deep, /^GRAPHQL_VALIDATION_FAILED$/, /13 fields deep; at most 12/],
      ['withdrawn grant', as(WITHDRAWN), CHANGES, /^(FORBIDDEN|UPSTREAM_UNAUTHORIZED)$/, /./, withdraw],
    ];
    // Hive Gateway loads the supergraph at its first HTTP request; a graphql-ws subscribe before it fails there ("Expected null to be a GraphQL schema").
    expect((await gateway.query('{ __typename }', as(TENANT))).errors).toBeUndefined();
    for (const [name, params, query, code, message, whileOpen] of cases) {
      const errors = await refusalOf(params, query, whileOpen);
      expect([name, errors.map((error) => [error.extensions?.code, error.message])]).toEqual([name, [[expect.stringMatching(code), expect.stringMatching(message)]]]);
      expect([name, errors[0]!.message]).toEqual([name, expect.not.stringMatching(/^Unexpected error/)]);
      if (name === 'over cost') expect(errors[0]!.extensions).toMatchObject({ 'cost.max': 50000, 'cost.estimated': expect.any(Number) });
    }
  });

  it('Apollo Client 4: subscribeToMore on the rota query; an update lands in the normalised cache, an added and a removed shift in the watched rota, no refetch', async () => {
    const cache = new InMemoryCache();
    const link = split(
      ({ query }) => {
        const definition = getMainDefinition(query);
        return definition.kind === 'OperationDefinition' && definition.operation === 'subscription';
      },
      new GraphQLWsLink(gatewaySocket()),
      new HttpLink({ uri: gateway.url, headers: as(TENANT), fetch: countingFetch }),
    );
    const client = new ApolloClient({ link, cache });
    const rota = client.watchQuery<RotaData>({ query: apolloGql(ROTA) });
    const seen: RotaData[] = [];
    const watching = rota.subscribe({ next: (result) => void (result.data && seen.push(result.data as RotaData)) });
    const received: ChangeData[] = [];
    const pollsBefore = await polls();
    try {
      await waitFor(() => seen.length >= 1, 'the rota');
      expect(seen[0]!.shifts!.nodes.map((node) => node.id)).toEqual(shifts().map((shift) => shift.id));
      const stop = rota.subscribeToMore<ChangeData>({
        document: apolloGql(CHANGES),
        // The README's recipe: UPDATED needs nothing (the cache normalises the shift by
        // __typename and id); ADDED appends, REMOVED drops the node.
        updateQuery: (previous, { subscriptionData }) => {
          const change = subscriptionData.data?.shiftChanges;
          received.push(subscriptionData.data as ChangeData);
          const nodes = (previous as RotaData).shifts?.nodes ?? [];
          if (!change || !(previous as RotaData).shifts) return previous as RotaData;
          if (change.kind === 'ADDED' && change.shift && !nodes.some((node) => node.nodeId === change.nodeId)) {
            return { ...previous, shifts: { ...(previous as RotaData).shifts!, nodes: [...nodes, change.shift] } } as RotaData;
          }
          if (change.kind === 'REMOVED') return { ...previous, shifts: { ...(previous as RotaData).shifts!, nodes: nodes.filter((node) => node.nodeId !== change.nodeId) } } as RotaData;
          return previous as RotaData;
        },
      });
      try {
        await subscribedAndPolled(subgraph.server, pollsBefore);
        const shift = shifts()[3]!;
        const end = editShiftEnd(shift);
        await waitFor(() => received.length >= 1, 'the change through the gateway', 30_000);
        expect(received[0]!.shiftChanges).toEqual({
          __typename: 'ShiftChange',
          kind: 'UPDATED',
          nodeId: encodeNodeId('Shift', shift.id),
          shift: { __typename: 'Shift', id: shift.id, nodeId: encodeNodeId('Shift', shift.id), end, location: { __typename: 'Location', id: shift.location, name: expect.any(String), headcount: expect.any(Number) } },
        });
        // In the cache, and in what the rota query's watchers see.
        expect(cache.extract()[`Shift:${shift.id}`]).toMatchObject({ end });
        await waitFor(() => seen.at(-1)!.shifts!.nodes.find((node) => node.id === shift.id)?.end === end, 'the watched rota updated');
        expect(seen.at(-1)!.shifts!.nodes.map((node) => node.id)).toEqual(shifts().map((s) => s.id));

        // ADDED, then REMOVED: updateQuery edits the watched list.
        const ids = shifts().map((s) => s.id);
        const added = { ...shifts()[0]!, id: 'apollo-live-added' };
        shifts().push(added);
        await waitFor(() => seen.at(-1)!.shifts!.nodes.map((node) => node.id).join() === [...ids, added.id].join(), 'the added shift in the watched rota');
        expect(seen.at(-1)!.shifts!.nodes.at(-1)).toMatchObject({ id: added.id, end: added.end, location: { headcount: expect.any(Number) } });
        shifts().splice(shifts().indexOf(added), 1);
        await waitFor(() => seen.at(-1)!.shifts!.nodes.map((node) => node.id).join() === ids.join(), 'the removed shift gone from the watched rota');
        expect(received.map((change) => change.shiftChanges.kind)).toEqual(['UPDATED', 'ADDED', 'REMOVED']);
        expect(fetches).toBe(1);
      } finally {
        stop();
      }
    } finally {
      watching.unsubscribe();
      client.stop();
    }
  });

  it('urql with Graphcache: an update, an added and a removed shift land in the cache the rota query reads, no refetch', async () => {
    const socket = gatewaySocket();
    const rotaQuery = urqlGql<RotaData>(ROTA);
    const client = new UrqlClient({
      url: gateway.url,
      preferGetMethod: false,
      fetch: countingFetch,
      fetchOptions: { headers: as(TENANT) },
      exchanges: [
        cacheExchange({
          keys: { ShiftChange: () => null, ShiftConnection: () => null },
          // The README's recipe: UPDATED needs nothing (Graphcache normalises the shift
          // by __typename and id); ADDED appends to the cached rota, REMOVED drops it.
          updates: {
            Subscription: {
              shiftChanges: (result, _args, cache) => {
                const change = (result as unknown as ChangeData).shiftChanges;
                if (change.kind === 'UPDATED') return;
                cache.updateQuery({ query: rotaQuery }, (data) => {
                  if (!data?.shifts) return data;
                  const nodes = data.shifts.nodes.filter((node) => node.nodeId !== change.nodeId);
                  if (change.kind === 'ADDED' && change.shift) nodes.push(change.shift);
                  return { ...data, shifts: { ...data.shifts, nodes } };
                });
              },
            },
          },
        }),
        subscriptionExchange({ forwardSubscription: (request) => ({ subscribe: (sink) => ({ unsubscribe: socket.subscribe({ ...request, query: request.query ?? '' }, sink) }) }) }),
        fetchExchange,
      ],
    });
    const first = await client.query(rotaQuery, {}).toPromise();
    expect(first.error).toBeUndefined();
    expect(first.data!.shifts!.nodes.map((node) => node.id)).toEqual(shifts().map((shift) => shift.id));
    const received: ChangeData[] = [];
    const pollsBefore = await polls();
    const { unsubscribe } = client.subscription<ChangeData>(urqlGql(CHANGES), {}).subscribe((result) => {
      if (result.data) received.push(result.data);
    });
    try {
      await subscribedAndPolled(subgraph.server, pollsBefore);
      const shift = shifts()[5]!;
      const end = editShiftEnd(shift);
      await waitFor(() => received.length >= 1, 'the change through the gateway', 30_000);
      expect(received[0]!.shiftChanges).toMatchObject({ kind: 'UPDATED', nodeId: encodeNodeId('Shift', shift.id), shift: { id: shift.id, end, location: { headcount: expect.any(Number) } } });
      // The rota read from Graphcache alone (cache-only: no request) has the new end.
      const cachedRota = async () => (await client.query(rotaQuery, {}, { requestPolicy: 'cache-only' }).toPromise()).data!.shifts!.nodes;
      expect((await cachedRota()).find((node) => node.id === shift.id)).toMatchObject({ end, location: { headcount: expect.any(Number) } });

      // ADDED, then REMOVED: the updater edits the cached rota.
      const ids = shifts().map((s) => s.id);
      const added = { ...shifts()[0]!, id: 'urql-live-added' };
      shifts().push(added);
      await waitFor(() => received.length >= 2, 'the ADDED change');
      expect((await cachedRota()).map((node) => node.id)).toEqual([...ids, added.id]);
      expect((await cachedRota()).at(-1)).toMatchObject({ id: added.id, end: added.end, location: { headcount: expect.any(Number) } });
      shifts().splice(shifts().indexOf(added), 1);
      await waitFor(() => received.length >= 3, 'the REMOVED change');
      expect((await cachedRota()).map((node) => node.id)).toEqual(ids);
      expect(received.map((change) => change.shiftChanges.kind)).toEqual(['UPDATED', 'ADDED', 'REMOVED']);
      expect(fetches).toBe(1);
    } finally {
      unsubscribe();
    }
  });

  it('Relay: requestSubscription with the updater keyed by nodeId updates, adds and removes in the store, no refetch', async () => {
    const environment = createTenantEnvironment({ url: gateway.url, headers: as(TENANT), fetch: countingFetch, live: gatewaySocket() });
    await relayKeepsRotaCurrent({
      environment,
      shifts: shifts(),
      fetches: () => fetches,
      subscription: async () => {
        const pollsBefore = await polls();
        return () => subscribedAndPolled(subgraph.server, pollsBefore);
      },
    });
  });
});

/**
 * docs/frontend.md's "Live updates" recipes for Apollo Client 4 and urql, run as the page
 * prints them (test/helpers/liveRecipes.ts: only the gateway's URLs and the declared
 * `tenantId` and `showLiveError` are supplied), through Hive Gateway with the committed
 * router/gateway.config.ts:
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

describe("docs/frontend.md's live recipes, as printed, through Hive Gateway", () => {
  let stops: Array<() => void> = [];

  afterEach(async () => {
    for (const stop of stops) stop();
    stops = [];
    await waitFor(() => subgraph.server.live.subscriptions === 0, 'the subscriptions ended');
  });

  const urls = () => ({ http: gateway.url, ws: wsUrl(gateway.url) });
  const tenant = (id: string) => subgraph.emulator.tenants.find((t) => t.tenantId === id)!;
  const noError = (error: Error) => {
    throw new Error(`showLiveError: ${error.message}`);
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
    await subscribedAndPolled(subgraph.server, since);

    await addShift(PARTIAL.tenantId, 'apollo-partial-added');
    // A later change, on the page: once it shows, the ADDED before it was handled too.
    const edited = tenant(PARTIAL.tenantId).shifts[2]!;
    const end = editShiftEnd(edited);
    await waitFor(() => current()!.shifts!.nodes.find((node) => node.id === edited.id)?.end === end, 'the later UPDATED in the watched rota');
    const cached = current()!.shifts!.nodes.map((node) => node.id);
    expect(cached).toHaveLength(100);
    expect(cached).not.toContain('apollo-partial-added');
    const fresh = await recipe.liveClient.query<Rota>({ query: apolloGql`query Rota { shifts(first: 100) { nodes { id nodeId end } pageInfo { hasNextPage } } }`, fetchPolicy: 'network-only' });
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
    await subscribedAndPolled(subgraph.server, since);
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
    await subscribedAndPolled(subgraph.server, since);
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
    await subscribedAndPolled(subgraph.server, since);
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
  // A subgraph that serves clients directly (no router secret, trusted headers), on the
  // shared emulator: the shared one answers only the router, and would refuse these
  // connections for the missing secret before it looked at the tenant.
  let direct: TestSubgraph;
  const realWebSocket = globalThis.WebSocket;
  let opened = 0;

  beforeAll(async () => {
    direct = await startTestSubgraph({}, { LOG_LEVEL: 'error' }, {}, subgraph.emulator);
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
    await direct?.close();
  });

  const urls = () => ({ http: direct.server.url, ws: wsUrl(direct.server.url) });
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
      url: wsUrl(direct.server.url),
      connectionParams: { headers: { 'x-tenant-id': UNKNOWN_TENANT } },
      shouldRetry: (event) => typeof (event as CloseEvent | null)?.code === 'number' && (event as CloseEvent).code !== 4403,
    });
    const environment: Environment = createTenantEnvironment({ url: direct.server.url, headers: { 'x-tenant-id': UNKNOWN_TENANT }, live });
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
