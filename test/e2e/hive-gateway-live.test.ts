import { ApolloClient, HttpLink, InMemoryCache, gql as apolloGql, split } from '@apollo/client';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { getMainDefinition } from '@apollo/client/utilities';
import { Client as UrqlClient, fetchExchange, gql as urqlGql, subscriptionExchange } from '@urql/core';
import { cacheExchange } from '@urql/exchange-graphcache';
import { createClient, type Client } from 'graphql-ws';
import type { Counter } from 'prom-client';
import { createTenantEnvironment } from '../../examples/relay/src/environment';
import { startPeopleSubgraph, type RunningPeopleSubgraph } from '../../examples/people-subgraph/server';
import { encodeNodeId } from '../../src/graphql/data/node';
import { as, gatewayTenants } from '../helpers/fixtures';
import { HIVE_ROUTER_SECRET, startHiveGateway, type RunningGateway } from '../helpers/hiveGateway';
import { editShiftEnd, relayKeepsRotaCurrent } from '../helpers/relayLive';
import { wsUrl } from '../helpers/liveClient';
import { startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';
import { counterTotal, waitFor } from '../helpers/waitFor';

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

const { withShifts: TENANT, other: WITHDRAWN } = gatewayTenants();

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
  let subgraph: TestSubgraph;
  let people: RunningPeopleSubgraph;
  let gateway: RunningGateway;
  let sockets: Client[] = [];
  let fetches = 0;

  beforeAll(async () => {
    subgraph = await startTestSubgraph({ tenants: [TENANT, WITHDRAWN] }, { WFS_ROUTER_SECRET: HIVE_ROUTER_SECRET, WFS_POLL_INTERVAL_SECONDS: '1', WFS_MAX_COST: '5000', LOG_LEVEL: 'warn' });
    people = await startPeopleSubgraph();
    gateway = await startHiveGateway({ wfs: subgraph.server.url, people: people.url }, HIVE_ROUTER_SECRET);
  });
  beforeEach(() => {
    fetches = 0;
  });
  afterEach(async () => {
    await Promise.all(sockets.map((socket) => socket.dispose()));
    sockets = [];
    await waitFor(() => subgraph.server.live.subscriptions === 0, 'the gateway ended its subscription');
  });
  afterAll(async () => {
    await gateway?.close();
    await people?.close();
    await subgraph?.close();
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
  const polls = () => counterTotal(subgraph.server.metrics.registry.getSingleMetric('wfs_live_polls_total') as Counter<string>, { outcome: 'ok' });
  /** Resolves once the gateway subscribed to our subgraph and its baseline poll is done. */
  const subscribedSince = async (pollsBefore: number) => {
    await waitFor(() => subgraph.server.live.subscriptions === 1, 'the gateway subscribed to our subgraph');
    await waitFor(async () => (await polls()) > pollsBefore, 'the baseline poll');
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
    const heavy = 'subscription { shiftChanges { shift { location { shifts(first: 100) { nodes { location { shifts(first: 100) { nodes { id } } } } } } } } }';
    const deep = 'subscription { shiftChanges { shift { location { shifts(first: 1) { nodes { location { shifts(first: 1) { nodes { location { shifts(first: 1) { nodes { location { name } } } } } } } } } } } } }';
    const withdraw = () => {
      const company = subgraph.emulator.tenants.find((tenant) => tenant.tenantId === WITHDRAWN.tenantId)!;
      company.grantedScopes = ['locations.read'];
      subgraph.emulator.revokeTokens(company.tenantId);
    };
    const cases: Array<[string, Record<string, string>, string, RegExp, RegExp, (() => void)?]> = [
      ['unknown tenant', { 'x-tenant-id': 'no-such-company' }, CHANGES, /^FORBIDDEN$/, /not configured on this subgraph/],
      ['no tenant', {}, CHANGES, /^UNAUTHENTICATED$/, /x-tenant-id/],
      ['over cost', as(TENANT), heavy, /^GRAPHQL_VALIDATION_FAILED$/, /estimated at \d+ .* at most 5000/],
      ['invalid document (deeper than the depth limit)', as(TENANT), deep, /^GRAPHQL_VALIDATION_FAILED$/, /13 fields deep; at most 12/],
      ['withdrawn grant', as(WITHDRAWN), CHANGES, /^(FORBIDDEN|UPSTREAM_UNAUTHORIZED)$/, /./, withdraw],
    ];
    // Hive Gateway loads the supergraph at its first HTTP request; a graphql-ws subscribe before it fails there ("Expected null to be a GraphQL schema").
    expect((await gateway.query('{ __typename }', as(TENANT))).errors).toBeUndefined();
    for (const [name, params, query, code, message, whileOpen] of cases) {
      const errors = await refusalOf(params, query, whileOpen);
      expect([name, errors.map((error) => [error.extensions?.code, error.message])]).toEqual([name, [[expect.stringMatching(code), expect.stringMatching(message)]]]);
      expect([name, errors[0]!.message]).toEqual([name, expect.not.stringMatching(/^Unexpected error/)]);
      if (name === 'over cost') expect(errors[0]!.extensions).toMatchObject({ 'cost.max': 5000, 'cost.estimated': expect.any(Number) });
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
        await subscribedSince(pollsBefore);
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
      await subscribedSince(pollsBefore);
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
        return () => subscribedSince(pollsBefore);
      },
    });
  });
});
