import { ApolloClient, InMemoryCache, gql as apolloGql } from '@apollo/client';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { Client, fetchExchange, gql, subscriptionExchange, type AnyVariables, type DocumentInput } from '@urql/core';
import { cacheExchange } from '@urql/exchange-graphcache';
import { buildClientSchema, buildSchema, findBreakingChanges, getIntrospectionQuery, introspectionFromSchema, parse, validate, type IntrospectionQuery } from 'graphql';
import type { Client as WsClient } from 'graphql-ws';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { relayPagination } from '@urql/exchange-graphcache/extras';
import {
  createOperationDescriptor,
  fetchQuery,
  getSelector,
  type Environment,
  type GraphQLTaggedNode,
  type OperationType,
  type ReaderFragment,
} from 'relay-runtime';
import AppQuery from '../../examples/relay/src/__generated__/AppQuery.graphql';
import LocationCardRefetchQuery from '../../examples/relay/src/__generated__/LocationCardRefetchQuery.graphql';
import LocationCardFragment from '../../examples/relay/src/__generated__/LocationCard_location.graphql';
import LocationListPaginationQuery from '../../examples/relay/src/__generated__/LocationListPaginationQuery.graphql';
import LocationListFragment from '../../examples/relay/src/__generated__/LocationList_query.graphql';
import ShiftCardRefetchQuery from '../../examples/relay/src/__generated__/ShiftCardRefetchQuery.graphql';
import ShiftCardFragment from '../../examples/relay/src/__generated__/ShiftCard_shift.graphql';
import ShiftListPaginationQuery from '../../examples/relay/src/__generated__/ShiftListPaginationQuery.graphql';
import ShiftListFragment from '../../examples/relay/src/__generated__/ShiftList_query.graphql';
import { createTenantEnvironment } from '../../examples/relay/src/environment';
import { demoTenants, makeTenant, type EmulatorTenant } from '../../tools/emulator';
import { encodeNodeId } from '../../src/graphql/data/node';
import { liveClient } from '../helpers/liveClient';
import { withNumericIds } from '../helpers/numericIds';
import { editShiftEnd, relayKeepsRotaCurrent } from '../helpers/relayLive';
import { errorCodes, livePolls, startTestSubgraph, subscribedAndPolled, type TestSubgraph } from '../helpers/subgraph';
import { waitFor } from '../helpers/waitFor';

/**
 * The frontends' client libraries driven directly against the running subgraph over real
 * HTTP and WebSocket, one subgraph serving every test (the same clients through Hive
 * Gateway: test/e2e/hive-gateway.test.ts):
 *
 * - queries and pagination, as Relay-first teams run them: relay-runtime with the
 *   artifacts relay-compiler wrote for examples/relay (no browser or React needed: the
 *   same store, network and connection handler the hooks use), and urql with
 *   Graphcache's relayPagination(). The upstream numbers locations and shifts
 *   independently (location 1 and shift 1 both exist), the case in which a client cache
 *   keyed by the upstream id would merge two different records;
 * - the schema files clients compile against, checked against what the subgraph serves;
 * - live subscriptions over graphql-ws: Apollo Client 4 through its GraphQLWsLink (the
 *   updated shift lands in its normalised cache, no refetch), urql through
 *   subscriptionExchange with Graphcache, and relay-runtime's requestSubscription with
 *   examples/relay's artifacts and updater.
 */

const numbered = withNumericIds(
  makeTenant({ tenantId: '0b7f3c1e-2a4d-4e6f-8a9b-1c2d3e4f5a6b', name: 'Numbered Bakeries', locationCount: 47, shiftCount: 230 }),
);
// Another company of the same upstream: its ids are numbers too, but others.
const neighbour = withNumericIds(
  makeTenant({ tenantId: '5d6e7f80-9a1b-4c2d-8e3f-4a5b6c7d8e9f', name: 'Neighbour Deli', locationCount: 5, shiftCount: 20, shard: 1 }),
  1001,
  5001,
);
const demo = demoTenants();
const harbourLane = demo[0]!;
// A rota that fits one page: the Relay updater appends an ADDED shift only to a complete list.
const relayRota = makeTenant({ tenantId: '7a1c2e3f-4b5d-4e6f-9a0b-1c2d3e4f5a70', name: 'Relay Rota', locationCount: 3, shiftCount: 20 });
const apiSchemaIntrospection = introspectionFromSchema(
  buildSchema(readFileSync(path.join(__dirname, '..', '..', 'supergraph.api.graphql'), 'utf8')),
);

/** Every GraphQL request the clients made, with the error codes they got back. */
interface Call {
  tenantId: string;
  method: string;
  query: string;
  status: number;
  codes: string[];
}

let subgraph: TestSubgraph;
let calls: Call[];

/** A fetch that records each call, for the clients under test. */
function recordingFetch(tenantId: string): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    const query = init?.body ? String((JSON.parse(String(init.body)) as { query: string }).query) : (url.searchParams.get('query') ?? '');
    const text = await response.clone().text();
    let codes: string[];
    try {
      codes = ((JSON.parse(text) as { errors?: Array<{ extensions?: { code?: string } }> }).errors ?? []).map((error) => error.extensions?.code ?? '?');
    } catch {
      codes = [];
    }
    calls.push({ tenantId, method: init?.method ?? 'GET', query, status: response.status, codes });
    return response;
  };
}

/** The emulator's copy of `tenant`: the record the upstream serves, which the live tests edit. */
function upstreamOf(tenant: EmulatorTenant): EmulatorTenant {
  return subgraph.emulator.tenants.find((candidate) => candidate.tenantId === tenant.tenantId)!;
}

beforeAll(async () => {
  // Live polls every 100 ms (through the server's options) so a change arrives within the test.
  subgraph = await startTestSubgraph({ tenants: [numbered, neighbour, ...demo, relayRota] }, { LOG_LEVEL: 'warn' }, { live: { pollIntervalMs: 100 } });
});

afterAll(async () => {
  await subgraph.close();
});

describe('relay-runtime with the examples/relay artifacts', () => {
  beforeEach(() => {
    calls = [];
  });

  function environmentFor(tenant: EmulatorTenant): Environment {
    return createTenantEnvironment({ url: subgraph.server.url, headers: { 'x-tenant-id': tenant.tenantId }, fetch: recordingFetch(tenant.tenantId) });
  }

  async function run<T extends OperationType>(environment: Environment, query: GraphQLTaggedNode, variables: T['variables']): Promise<T['response']> {
    const data = await fetchQuery<T>(environment, query, variables, { fetchPolicy: 'network-only' }).toPromise();
    if (!data) throw new Error('no data');
    return data;
  }

  /** The data of `fragment` for the fragment reference `ref`, read from the store. */
  function read<T>(environment: Environment, fragment: ReaderFragment, ref: unknown): T {
    const selector = getSelector(fragment, ref as never);
    if (!selector || selector.kind !== 'SingularReaderSelector') throw new Error(`no selector for ${fragment.name}`);
    return environment.lookup(selector).data as T;
  }

  interface ListData {
    edges: ReadonlyArray<{ cursor: string; node: { nodeId: string } }>;
    pageInfo: { hasNextPage: boolean; endCursor: string | null };
  }

  /**
   * Pages a connection the way usePaginationFragment does: the pagination query with
   * the end cursor, then the fragment read again, the connection handler having
   * appended the page to the one list in the store.
   */
  async function pageThrough(
    environment: Environment,
    root: unknown,
    fragment: ReaderFragment,
    field: 'locations' | 'shifts',
    next: (cursor: string) => Promise<unknown>,
  ): Promise<{ pages: number; list: ListData }> {
    let pages = 1;
    let list = read<Record<string, ListData>>(environment, fragment, root)[field]!;
    while (list.pageInfo.hasNextPage) {
      await next(list.pageInfo.endCursor!);
      pages += 1;
      list = read<Record<string, ListData>>(environment, fragment, root)[field]!;
    }
    return { pages, list };
  }

  it('pages through every location and shift, each edge once and in upstream order, with no two types sharing a data id', async () => {
    const environment = environmentFor(numbered);
    const operation = createOperationDescriptor(AppQuery, {});
    const retained = environment.retain(operation);
    try {
      // AppQuery's default page sizes come from the fragments' @argumentDefinitions (20 and 50).
      await run(environment, AppQuery, {});
      const root = environment.lookup(operation.fragment).data;

      const locations = await pageThrough(environment, root, LocationListFragment, 'locations', (cursor) =>
        run(environment, LocationListPaginationQuery, { count: 5, cursor }),
      );
      const shifts = await pageThrough(environment, root, ShiftListFragment, 'shifts', (cursor) =>
        run(environment, ShiftListPaginationQuery, { first: 50, after: cursor }),
      );

      // 47 locations: 20, then 6 pages of 5 (the last one 2). 230 shifts: 50, then 4 pages of 50 (the last one 30).
      expect({ locationPages: locations.pages, shiftPages: shifts.pages }).toEqual({ locationPages: 7, shiftPages: 5 });
      const locationIds = locations.list.edges.map((edge) => read<{ id: string }>(environment, LocationCardFragment, edge.node).id);
      const shiftIds = shifts.list.edges.map((edge) => read<{ id: string }>(environment, ShiftCardFragment, edge.node).id);
      expect(locationIds).toEqual(numbered.locations.map((location) => location.id));
      expect(shiftIds).toEqual(numbered.shifts.map((shift) => shift.id));
      const duplicates = (ids: string[]) => ids.length - new Set(ids).size;
      expect({ locations: duplicates(locations.list.edges.map((e) => e.node.nodeId)), shifts: duplicates(shifts.list.edges.map((e) => e.node.nodeId)) }).toEqual({
        locations: 0,
        shifts: 0,
      });

      // The upstream ids collide across types (location 1 and shift 1 ...) ...
      const colliding = locationIds.filter((id) => shiftIds.includes(id));
      expect(colliding).toHaveLength(47);
      // ... and still the store holds every location and every shift as its own record,
      // keyed by nodeId: a store keyed by `id` would have merged these 47 pairs.
      const source = environment.getStore().getSource();
      const records = source.getRecordIDs().map((dataId) => source.get(dataId)!);
      const ofType = (type: string) => records.filter((record) => record['__typename'] === type);
      expect({ locations: ofType('Location').length, shifts: ofType('Shift').length }).toEqual({ locations: 47, shifts: 230 });
      for (const record of [...ofType('Location'), ...ofType('Shift')]) {
        expect(record['__id']).toBe(record['nodeId']);
        expect(record['__id']).toBe(encodeNodeId(String(record['__typename']), String(record['id'])));
      }
      expect(calls.every((call) => call.method === 'POST' && call.status === 200 && call.codes.length === 0)).toBe(true);
      expect(calls).toHaveLength(1 + 6 + 4);
    } finally {
      retained.dispose();
    }
  });

  it('pages the shifts backward with last/before (the bidirectional connection), each edge once', async () => {
    const environment = environmentFor(numbered);
    const operation = createOperationDescriptor(ShiftListPaginationQuery, { first: null, last: 60 });
    const retained = environment.retain(operation);
    try {
      // The refetch query with `last` and no cursor: the list's last 60 shifts.
      await run(environment, ShiftListPaginationQuery, { first: null, last: 60 });
      const root = environment.lookup(operation.fragment).data;
      interface Backward {
        edges: ReadonlyArray<{ node: { nodeId: string } }>;
        pageInfo: { hasPreviousPage: boolean; startCursor: string | null };
      }
      const shiftsOf = () => read<{ shifts: Backward }>(environment, ShiftListFragment, root).shifts;
      let pages = 1;
      while (shiftsOf().pageInfo.hasPreviousPage) {
        await run(environment, ShiftListPaginationQuery, { first: null, last: 60, before: shiftsOf().pageInfo.startCursor });
        pages += 1;
      }
      const ids = shiftsOf().edges.map((edge) => read<{ id: string }>(environment, ShiftCardFragment, edge.node).id);
      expect(calls.map((call) => call.codes)).toEqual([[], [], [], []]);
      // 230 shifts: 60, 60, 60, then the first 50.
      expect(pages).toBe(4);
      expect(ids).toEqual(numbered.shifts.map((shift) => shift.id));
    } finally {
      retained.dispose();
    }
  });

  it('refetches one Location and one Shift through node(nodeId:), the @refetchable queries', async () => {
    const environment = environmentFor(numbered);
    const location = numbered.locations[6]!;
    const shift = numbered.shifts[117]!;

    const byLocation = await run<{ variables: { nodeId: string }; response: { node: unknown } }>(environment, LocationCardRefetchQuery, {
      nodeId: encodeNodeId('Location', location.id),
    });
    expect(read(environment, LocationCardFragment, byLocation.node)).toEqual({ id: location.id, name: location.name, nodeId: encodeNodeId('Location', location.id) });

    const byShift = await run<{ variables: { nodeId: string }; response: { node: unknown } }>(environment, ShiftCardRefetchQuery, {
      nodeId: encodeNodeId('Shift', shift.id),
    });
    expect(read<{ id: string; start: string; location: { id: string } }>(environment, ShiftCardFragment, byShift.node)).toMatchObject({
      id: shift.id,
      start: shift.start,
      location: { id: shift.location },
    });
    expect(calls.map((call) => ({ query: call.query.includes('node(nodeId: $nodeId)'), codes: call.codes }))).toEqual([
      { query: true, codes: [] },
      { query: true, codes: [] },
    ]);
  });

  it("answers null for another company's node id, and BAD_USER_INPUT for a forged one", async () => {
    const environment = environmentFor(numbered);
    const refetch = (nodeId: string) => run<{ variables: { nodeId: string }; response: { node: unknown } }>(environment, LocationCardRefetchQuery, { nodeId });

    // The neighbour's location 1001 and Harbour Lane's first location: valid node ids, other companies' records.
    expect((await refetch(encodeNodeId('Location', neighbour.locations[0]!.id))).node).toBeNull();
    expect((await refetch(encodeNodeId('Location', harbourLane.locations[0]!.id))).node).toBeNull();
    // A type `node` does not serve, and an id that is no node id at all.
    expect((await refetch(encodeNodeId('User', '1'))).node).toBeNull();
    expect((await refetch('TG9jYXRpb246MQ==')).node).toBeNull();
    expect(calls.map((call) => call.codes)).toEqual([[], [], [], ['BAD_USER_INPUT']]);
  });
});

describe('urql with Graphcache relayPagination()', () => {
  beforeEach(() => {
    calls = [];
  });

  const LocationsPage = gql`
    query LocationsPage($first: Int!, $after: String) {
      locations(first: $first, after: $after) {
        edges {
          cursor
          node {
            nodeId
            id
            name
          }
        }
        pageInfo {
          hasNextPage
          endCursor
        }
      }
    }
  `;
  const ShiftsPage = gql`
    query ShiftsPage($first: Int!, $after: String) {
      shifts(first: $first, after: $after) {
        edges {
          cursor
          node {
            nodeId
            id
            start
          }
        }
        pageInfo {
          hasNextPage
          endCursor
        }
      }
    }
  `;
  const NodeQuery = gql`
    query Refetch($nodeId: ID!) {
      node(nodeId: $nodeId) {
        __typename
        nodeId
        ... on Location {
          id
          name
        }
        ... on Shift {
          id
          start
        }
      }
    }
  `;

  /** One client (and one cache) per company, like the Relay environment. */
  function clientFor(tenant: EmulatorTenant, method: 'POST' | 'GET with preflight header' | 'urql default'): Client {
    const headers: Record<string, string> = { 'x-tenant-id': tenant.tenantId };
    if (method === 'GET with preflight header') headers['apollo-require-preflight'] = 'true';
    return new Client({
      url: subgraph.server.url,
      fetch: recordingFetch(tenant.tenantId),
      fetchOptions: { headers },
      ...(method === 'POST' ? { preferGetMethod: false } : {}),
      exchanges: [
        cacheExchange({
          // The client-facing schema, so Graphcache matches `... on Location` inside `node` exactly.
          schema: apiSchemaIntrospection,
          // Connections, edges and page info have no identity of their own: embedded in their parent.
          keys: { LocationConnection: () => null, LocationEdge: () => null, ShiftConnection: () => null, ShiftEdge: () => null, PageInfo: () => null },
          resolvers: { Query: { locations: relayPagination(), shifts: relayPagination() } },
        }),
        fetchExchange,
      ],
    });
  }

  interface Page {
    edges: Array<{ cursor: string; node: { nodeId: string; id: string } }>;
    pageInfo: { hasNextPage: boolean; endCursor: string | null };
  }

  async function query<D>(client: Client, document: DocumentInput<D, AnyVariables>, variables: AnyVariables): Promise<D> {
    const result = await client.query(document, variables, { requestPolicy: 'network-only' }).toPromise();
    if (result.error) throw result.error;
    return result.data!;
  }

  async function allPages(client: Client, document: DocumentInput<Record<string, Page>, AnyVariables>, field: string, first: number) {
    let page = (await query(client, document, { first, after: null }))[field]!;
    let pages = 1;
    while (page.pageInfo.hasNextPage) {
      // relayPagination() merges every page fetched so far into the one result.
      page = (await query(client, document, { first, after: page.pageInfo.endCursor }))[field]!;
      pages += 1;
    }
    return { pages, edges: page.edges };
  }

  it.each(['POST', 'GET with preflight header'] as const)('pages every location and shift, each edge once, over %s, and refetches through node', async (method) => {
    const client = clientFor(numbered, method);
    const locations = await allPages(client, LocationsPage, 'locations', 5);
    const shifts = await allPages(client, ShiftsPage, 'shifts', 40);
    expect({ locationPages: locations.pages, shiftPages: shifts.pages }).toEqual({ locationPages: 10, shiftPages: 6 });
    expect(locations.edges.map((edge) => edge.node.id)).toEqual(numbered.locations.map((location) => location.id));
    expect(shifts.edges.map((edge) => edge.node.id)).toEqual(numbered.shifts.map((shift) => shift.id));
    expect(new Set(shifts.edges.map((edge) => edge.cursor)).size).toBe(230);

    const location = numbered.locations[3]!;
    const shift = numbered.shifts[3]!;
    // Same upstream id, two types, two node ids.
    expect(location.id).toBe(shift.id);
    const refetched = await query<{ node: Record<string, string> | null }>(client, NodeQuery, { nodeId: encodeNodeId('Location', location.id) });
    expect(refetched.node).toEqual({ __typename: 'Location', nodeId: encodeNodeId('Location', location.id), id: location.id, name: location.name });
    const refetchedShift = await query<{ node: Record<string, string> | null }>(client, NodeQuery, { nodeId: encodeNodeId('Shift', shift.id) });
    expect(refetchedShift.node).toEqual({ __typename: 'Shift', nodeId: encodeNodeId('Shift', shift.id), id: shift.id, start: shift.start });
    const foreign = await query<{ node: unknown }>(client, NodeQuery, { nodeId: encodeNodeId('Location', neighbour.locations[0]!.id) });
    expect(foreign.node).toBeNull();

    const expectedMethod = method === 'POST' ? 'POST' : 'GET';
    expect(calls.map((call) => `${call.method} ${call.status}`)).toEqual(Array(10 + 6 + 3).fill(`${expectedMethod} 200`));
  });

  it("with urql's defaults (queries as GET, no extra header) the server's CSRF prevention refuses the request", async () => {
    const client = clientFor(numbered, 'urql default');
    const result = await client.query(LocationsPage, { first: 5, after: null }).toPromise();
    expect(result.data).toBeUndefined();
    expect(result.error?.message).toMatch(/Cross-Site Request Forgery/);
    expect(calls.map((call) => `${call.method} ${call.status}`)).toEqual(['GET 400']);
  });
});

describe('the schema files clients compile against (docs/frontend.md, "The client-facing schema")', () => {
  const schemaFile = (file: string) => buildSchema(readFileSync(path.join(__dirname, '..', '..', file), 'utf8'));
  const tenant = () => ({ 'x-tenant-id': harbourLane.tenantId });

  it('schema.api.graphql is what the subgraph alone serves (npm start, the demo), less the federation machinery', async () => {
    const introspection = await subgraph.query<IntrospectionQuery>(getIntrospectionQuery(), {}, tenant());
    const served = buildClientSchema(introspection.data!);
    // Everything a client compiled against the file can ask, the server answers ...
    expect(findBreakingChanges(schemaFile('schema.api.graphql'), served)).toEqual([]);
    // ... and the file leaves out nothing a client could use but the federation entry points and directives.
    const leftOut = findBreakingChanges(served, schemaFile('schema.api.graphql')).map((change) => change.description);
    const federation = /^((link|federation)__\w+|_Service|_Any|_Entity|Query\._entities|Query\._service|link|key|shareable|cost|listSize) was removed\.$/;
    expect(leftOut.length).toBeGreaterThan(0);
    expect(leftOut.filter((description) => !federation.test(description))).toEqual([]);
  });

  it("supergraph.api.graphql adds the other subgraphs' fields, which the subgraph alone refuses with HTTP 400", async () => {
    const document = parse('{ locations(first: 1) { nodes { name headcount } } }');
    expect(validate(schemaFile('supergraph.api.graphql'), document)).toEqual([]);
    expect(validate(schemaFile('schema.api.graphql'), document).map((error) => error.message)).toEqual([expect.stringContaining('headcount')]);
    const response = await subgraph.query('{ locations(first: 1) { nodes { name headcount } } }', {}, tenant());
    expect({ status: response.status, codes: errorCodes(response) }).toEqual({ status: 400, codes: ['GRAPHQL_VALIDATION_FAILED'] });
  });
});

describe('live updates in the frontends\' clients', () => {
  const CHANGES = 'subscription RotaChanges { shiftChanges { kind nodeId shift { id nodeId end } } }';
  let sockets: WsClient[] = [];

  afterEach(async () => {
    await Promise.all(sockets.map((socket) => socket.dispose()));
    sockets = [];
    await waitFor(() => subgraph.server.live.subscriptions === 0, 'subscriptions ended');
  });

  const socket = () => {
    const made = liveClient(subgraph.server.url, { 'x-tenant-id': harbourLane.tenantId });
    sockets.push(made);
    return made;
  };
  const baseline = async () => subscribedAndPolled(subgraph.server, await livePolls(subgraph.server));
  const editShift = (index: number) => {
    const shift = upstreamOf(harbourLane).shifts[index]!;
    editShiftEnd(shift);
    return shift;
  };

  it('Apollo Client 4 (GraphQLWsLink): the change arrives and updates the shift in the normalised cache', async () => {
    const cache = new InMemoryCache();
    const client = new ApolloClient({ link: new GraphQLWsLink(socket()), cache });
    const received: any[] = [];
    const subscription = client.subscribe({ query: apolloGql(CHANGES) }).subscribe({ next: (result) => void received.push(result.data) });
    try {
      await baseline();
      const shift = editShift(4);
      await waitFor(() => received.length >= 1, 'the change');
      expect(received[0]).toEqual({ shiftChanges: { __typename: 'ShiftChange', kind: 'UPDATED', nodeId: expect.any(String), shift: { __typename: 'Shift', id: shift.id, nodeId: expect.any(String), end: shift.end } } });
      expect(cache.extract()[`Shift:${shift.id}`]).toMatchObject({ end: shift.end });
    } finally {
      subscription.unsubscribe();
      client.stop();
    }
  });

  it('urql (subscriptionExchange, Graphcache): the change arrives', async () => {
    const ws = socket();
    const client = new Client({
      url: subgraph.server.url,
      exchanges: [
        cacheExchange({ keys: { ShiftChange: () => null } }),
        subscriptionExchange({ forwardSubscription: (request) => ({ subscribe: (sink) => ({ unsubscribe: ws.subscribe({ ...request, query: request.query ?? '' }, sink) }) }) }),
      ],
    });
    const received: any[] = [];
    const { unsubscribe } = client.subscription(gql(CHANGES), {}).subscribe((result) => {
      if (result.data) received.push(result.data);
    });
    try {
      await baseline();
      const shift = editShift(6);
      await waitFor(() => received.length >= 1, 'the change');
      expect(received[0].shiftChanges).toMatchObject({ kind: 'UPDATED', shift: { id: shift.id, end: shift.end } });
    } finally {
      unsubscribe();
    }
  });
});

describe('live updates in relay-runtime (requestSubscription, the updater keyed by nodeId)', () => {
  it('updates, adds and removes the shift in the store and the rota connection, with no refetch', async () => {
    const headers = { 'x-tenant-id': relayRota.tenantId };
    const live = liveClient(subgraph.server.url, headers);
    let fetches = 0;
    const environment = createTenantEnvironment({
      url: subgraph.server.url,
      headers,
      fetch: (input, init) => {
        fetches += 1;
        return fetch(input, init);
      },
      live,
    });
    try {
      await relayKeepsRotaCurrent({
        environment,
        shifts: upstreamOf(relayRota).shifts,
        fetches: () => fetches,
        subscription: async () => {
          const before = await livePolls(subgraph.server);
          return () => subscribedAndPolled(subgraph.server, before);
        },
      });
    } finally {
      await live.dispose();
    }
    await waitFor(() => subgraph.server.live.subscriptions === 0, 'subscription ended');
  });
});
