import { ApolloClient, InMemoryCache, gql } from '@apollo/client';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { createClient } from 'graphql-ws';
import type { Gauge } from 'prom-client';
import { startPeopleSubgraph, type RunningPeopleSubgraph } from '../../examples/people-subgraph/server';
import { as, gatewayTenants } from '../helpers/fixtures';
import { HIVE_ROUTER_SECRET as ROUTER_SECRET, gatewayPort, startHiveGateway, type RunningGateway } from '../helpers/hiveGateway';
import { hourLater, wsUrl } from '../helpers/liveClient';
import { livePolls, startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';
import { waitFor } from '../helpers/waitFor';

/** The subgraph protocols Hive Gateway subscribes to ours by (router/gateway.config.ts, SUBGRAPH_WFS_SUBSCRIPTIONS), and the `transport` label each shows as. */
const PROTOCOLS = [
  ['ws', 'ws'],
  ['sse', 'sse'],
  ['callback', 'callback'],
] as const;

const CHANGES = 'subscription RotaChanges { shiftChanges { kind nodeId shift { id end } } }';
const { withShifts: COMPANY } = gatewayTenants();

interface Change {
  shiftChanges: { kind: string; nodeId: string; shift: { id: string; end: string } | null };
}

/**
 * Through Hive Gateway's real runtime, with the committed router/gateway.config.ts set to
 * each subgraph protocol it can subscribe to ours by (graphql-ws, SSE, Apollo's HTTP
 * callback protocol), a client (Apollo Client 4 over graphql-ws to the gateway) receives
 * every change exactly once, and a refusal with its code. One subgraph behind three
 * gateways; the callback gateway's origin is the subgraph's WFS_SUBSCRIPTION_CALLBACK_ALLOW.
 */
describe('Hive Gateway subscribing to the subgraph over graphql-ws, SSE and HTTP callback', () => {
  let subgraph: TestSubgraph;
  let people: RunningPeopleSubgraph;
  const gateways = new Map<string, RunningGateway>();

  const transport = async (name: string) => (await (subgraph.server.metrics.registry.getSingleMetric('wfs_live_transport_subscriptions') as Gauge<string>).get()).values.find((value) => value.labels['transport'] === name)?.value ?? 0;

  /** Apollo Client 4 subscribed through `gateway`; what it received, and how to stop. */
  const subscribe = (gateway: RunningGateway, identity: Record<string, string>) => {
    const socket = createClient({ url: wsUrl(gateway.url), connectionParams: identity, retryAttempts: 0, shouldRetry: () => false });
    const client = new ApolloClient({ link: new GraphQLWsLink(socket), cache: new InMemoryCache() });
    const received: { changes: Change[]; errors: Array<{ extensions?: { code?: string } }> } = { changes: [], errors: [] };
    const subscription = client.subscribe<Change>({ query: gql(CHANGES) }).subscribe({
      next: (result) => {
        if (result.data) received.changes.push(result.data);
        if (result.error) received.errors.push(...(((result.error as { errors?: unknown }).errors ?? [result.error]) as typeof received.errors));
      },
      error: (error: unknown) => void received.errors.push(...(((error as { errors?: unknown }).errors ?? [error]) as typeof received.errors)),
    });
    const stop = async () => {
      subscription.unsubscribe();
      client.stop();
      await socket.dispose();
    };
    return { received, stop };
  };

  beforeAll(async () => {
    const callbackPort = await gatewayPort();
    subgraph = await startTestSubgraph({ tenants: [COMPANY] }, { WFS_ROUTER_SECRET: ROUTER_SECRET, LOG_LEVEL: 'warn', WFS_SUBSCRIPTION_CALLBACK_ALLOW: callbackPort.origin }, { live: { pollIntervalMs: 100 } });
    people = await startPeopleSubgraph();
    const urls = { wfs: subgraph.server.url, people: people.url };
    for (const [protocol] of PROTOCOLS) {
      const gateway = await startHiveGateway(urls, ROUTER_SECRET, { SUBGRAPH_WFS_SUBSCRIPTIONS: protocol }, protocol === 'callback' ? callbackPort : undefined);
      gateways.set(protocol, gateway);
      // The runtime loads the supergraph at its first HTTP request (a subscription first fails).
      expect(await gateway.query('{ __typename }', {})).toEqual({ data: { __typename: 'Query' } });
    }
  });
  afterAll(async () => {
    for (const gateway of gateways.values()) await gateway.close();
    await people?.close();
    await subgraph?.close();
  });

  it.each(PROTOCOLS)('over %s: every change reaches the client exactly once', async (protocol, label) => {
    const pollsBefore = await livePolls(subgraph.server);
    const { received, stop } = subscribe(gateways.get(protocol)!, as(COMPANY));
    try {
      await waitFor(() => subgraph.server.live.subscriptions === 1, 'the gateway subscribed to our subgraph');
      expect(await transport(label)).toBe(1);
      await waitFor(async () => (await livePolls(subgraph.server)) > pollsBefore, 'the baseline poll');
      const shifts = subgraph.emulator.tenants[0]!.shifts;
      const first = shifts[1]!;
      first.end = hourLater(first.end);
      await waitFor(() => received.changes.length >= 1, 'the first change through the gateway', 30_000);
      const second = shifts[4]!;
      second.end = hourLater(second.end);
      await waitFor(() => received.changes.length >= 2, 'the second change through the gateway', 30_000);
      const polled = await livePolls(subgraph.server);
      await waitFor(async () => (await livePolls(subgraph.server)) >= polled + 3, 'three more polls');
      expect(received.errors).toEqual([]);
      expect(received.changes.map((change) => [change.shiftChanges.kind, change.shiftChanges.shift?.id, change.shiftChanges.shift?.end])).toEqual([
        ['UPDATED', first.id, first.end],
        ['UPDATED', second.id, second.end],
      ]);
    } finally {
      await stop();
    }
    // The client gone, the gateway ends its subscription to ours (over callback: the next check finds it gone, 404).
    await waitFor(() => subgraph.server.live.subscriptions === 0, 'the subscription on our subgraph ended', 30_000);
  }, 90_000);

  it.each(PROTOCOLS)('over %s: a refused subscription reaches the client with its code', async (protocol) => {
    const { received, stop } = subscribe(gateways.get(protocol)!, { 'x-tenant-id': 'no-such-company' });
    try {
      await waitFor(() => received.errors.length > 0, 'the refusal through the gateway');
      expect(received.errors.map((error) => [error.extensions?.code, (error as { message?: string }).message])).toEqual([['FORBIDDEN', expect.stringMatching(/not configured on this subgraph/)]]);
      expect(received.changes).toEqual([]);
    } finally {
      await stop();
    }
    expect(subgraph.server.live.subscriptions).toBe(0);
  });
});
