import { ApolloClient, InMemoryCache, gql as apolloGql } from '@apollo/client';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { Client as UrqlClient, gql as urqlGql, subscriptionExchange } from '@urql/core';
import { cacheExchange } from '@urql/exchange-graphcache';
import type { Client } from 'graphql-ws';
import { createTenantEnvironment } from '../../examples/relay/src/environment';
import { makeTenant } from '../../src/emulator';
import { liveClient } from '../helpers/liveClient';
import { relayKeepsRotaCurrent } from '../helpers/relayLive';
import { startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';
import { counterTotal, waitFor } from '../helpers/waitFor';
import type { Counter } from 'prom-client';

const CHANGES = 'subscription RotaChanges { shiftChanges { kind nodeId shift { id nodeId end } } }';

/**
 * The frontends' own clients on a live subscription against the real server: Apollo
 * Client 4 through its GraphQLWsLink (the updated shift lands in its normalised cache,
 * no refetch), urql through subscriptionExchange with Graphcache, and relay-runtime's
 * requestSubscription with examples/relay's artifacts and updater (the same clients
 * through Hive Gateway: test/e2e/hive-gateway.test.ts).
 */
describe('live updates in the frontends\' clients', () => {
  let subgraph: TestSubgraph;
  let sockets: Client[] = [];

  beforeAll(async () => {
    subgraph = await startTestSubgraph({}, { LOG_LEVEL: 'warn' }, { live: { pollIntervalMs: 100 } });
  });
  afterEach(async () => {
    await Promise.all(sockets.map((socket) => socket.dispose()));
    sockets = [];
    await waitFor(() => subgraph.server.live.subscriptions === 0, 'subscriptions ended');
  });
  afterAll(() => subgraph.close());

  const socket = () => {
    const made = liveClient(subgraph.server.url, { 'x-tenant-id': subgraph.emulator.tenants[0]!.tenantId });
    sockets.push(made);
    return made;
  };
  const baseline = async () => {
    const before = await counterTotal(subgraph.server.metrics.registry.getSingleMetric('wfs_live_polls_total') as Counter<string>, { outcome: 'ok' });
    await waitFor(() => subgraph.server.live.subscriptions === 1, 'subscribed');
    await waitFor(async () => (await counterTotal(subgraph.server.metrics.registry.getSingleMetric('wfs_live_polls_total') as Counter<string>, { outcome: 'ok' })) > before, 'a poll');
  };
  const editShift = (index: number) => {
    const shift = subgraph.emulator.tenants[0]!.shifts[index]!;
    shift.end = shift.end.replace(/T(\d\d):(\d\d)/, (_m, hour: string, minutes: string) => `T${hour}:${minutes === '30' ? '00' : '30'}`);
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
    const client = new UrqlClient({
      url: subgraph.server.url,
      exchanges: [
        cacheExchange({ keys: { ShiftChange: () => null } }),
        subscriptionExchange({ forwardSubscription: (request) => ({ subscribe: (sink) => ({ unsubscribe: ws.subscribe({ ...request, query: request.query ?? '' }, sink) }) }) }),
      ],
    });
    const received: any[] = [];
    const { unsubscribe } = client.subscription(urqlGql(CHANGES), {}).subscribe((result) => {
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
  // A rota that fits one page: the updater appends an ADDED shift only to a complete list.
  const tenant = makeTenant({ tenantId: '7a1c2e3f-4b5d-4e6f-9a0b-1c2d3e4f5a70', name: 'Relay Rota', locationCount: 3, shiftCount: 20 });
  let subgraph: TestSubgraph;
  beforeAll(async () => {
    subgraph = await startTestSubgraph({ tenants: [tenant] }, { LOG_LEVEL: 'warn' }, { live: { pollIntervalMs: 100 } });
  });
  afterAll(() => subgraph.close());

  it('updates, adds and removes the shift in the store and the rota connection, with no refetch', async () => {
    const headers = { 'x-tenant-id': tenant.tenantId };
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
    const polls = () => counterTotal(subgraph.server.metrics.registry.getSingleMetric('wfs_live_polls_total') as Counter<string>, { outcome: 'ok' });
    try {
      await relayKeepsRotaCurrent({
        environment,
        shifts: subgraph.emulator.tenants[0]!.shifts,
        fetches: () => fetches,
        subscription: async () => {
          const before = await polls();
          return async () => {
            await waitFor(() => subgraph.server.live.subscriptions === 1, 'subscribed');
            await waitFor(async () => (await polls()) > before, 'the baseline poll');
          };
        },
      });
    } finally {
      await live.dispose();
    }
    await waitFor(() => subgraph.server.live.subscriptions === 0, 'subscription ended');
  });
});
