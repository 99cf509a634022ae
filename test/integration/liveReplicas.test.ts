import Redis from 'ioredis';
import type { Client } from 'graphql-ws';
import type { Counter, Gauge } from 'prom-client';
import { startEmulator, type Emulator } from '../../src/emulator';
import { collect, liveClient, type Received } from '../helpers/liveClient';
import { startRedisServer } from '../helpers/redisServer';
import { startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';
import { counterTotal, waitFor } from '../helpers/waitFor';

const SHIFT_CHANGES = 'subscription { shiftChanges { kind nodeId shift { id end } } }';

/**
 * Two replicas on one real redis-server and one emulator, subscribers on both: one
 * replica polls each list for the fleet (a lease in Redis) and the other hears its
 * changes; with Redis paused both poll, and no client gets a change twice.
 */
describe('live updates across replicas through Redis', () => {
  let redis: Awaited<ReturnType<typeof startRedisServer>>;
  let emulator: Emulator;
  let replicas: TestSubgraph[];
  let clients: Client[] = [];

  const polls = (replica: TestSubgraph) => counterTotal(replica.server.metrics.registry.getSingleMetric('wfs_live_polls_total') as Counter<string>, { outcome: 'ok' });
  const leading = async (replica: TestSubgraph) => ((await (replica.server.metrics.registry.getSingleMetric('wfs_live_pollers_leading') as Gauge).get()).values[0]?.value ?? 0);

  beforeAll(async () => {
    redis = await startRedisServer();
    emulator = await startEmulator();
    const env = { WFS_REDIS_URL: redis.url, WFS_REDIS_KEY: 'replica-redis-record-key-0123456789abcdef', WFS_CURSOR_SECRET: 'shared-replica-cursor-secret-0123456789', WFS_POLL_INTERVAL_SECONDS: '1', LOG_LEVEL: 'error' };
    replicas = [await startTestSubgraph({}, env, {}, emulator), await startTestSubgraph({}, env, {}, emulator)];
  });
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.dispose()));
    await Promise.all(replicas.map((replica) => replica.close()));
    await emulator.close();
    await redis.stop();
  });

  it('polls once per interval for the fleet, delivers to the subscribers of both replicas, and survives Redis pausing without a duplicate', async () => {
    const tenant = emulator.tenants[0]!;
    const received: Received[] = [];
    for (const replica of replicas) {
      const connection = liveClient(replica.server.url, { 'x-tenant-id': tenant.tenantId });
      clients.push(connection);
      for (let i = 0; i < 10; i++) received.push(collect(connection, SHIFT_CHANGES));
    }
    await waitFor(() => replicas.every((replica) => replica.server.live.subscriptions === 10), 'subscribed on both');
    // Each replica reads its baseline once, then one of them leads.
    await waitFor(async () => (await polls(replicas[0]!)) >= 1 && (await polls(replicas[1]!)) >= 1, 'both baselines');
    await waitFor(async () => (await leading(replicas[0]!)) + (await leading(replicas[1]!)) === 1, 'one leader for the fleet');
    const leader = (await leading(replicas[0]!)) === 1 ? replicas[0]! : replicas[1]!;
    const follower = leader === replicas[0] ? replicas[1]! : replicas[0]!;
    const followerPolls = await polls(follower);
    const leaderPolls = await polls(leader);

    const first = tenant.shifts[5]!;
    first.end = first.end.replace(/:00([+-])/, ':30$1');
    await waitFor(() => received.every((r) => r.results.length === 1), 'all twenty got the change');
    expect(received.every((r) => r.results[0]!.data.shiftChanges.shift.id === first.id)).toBe(true);
    // Two more intervals: the leader polled, the follower never did.
    const until = (await polls(leader)) + 2;
    await waitFor(async () => (await polls(leader)) >= until, 'two more polls of the leader');
    expect(await polls(follower)).toBe(followerPolls);
    expect((await polls(leader)) - leaderPolls).toBeGreaterThanOrEqual(3);

    // Redis stops answering for 4 s: each replica polls for its own subscribers, and
    // the changes they published meanwhile arrive when it answers again; none twice.
    const admin = new Redis(redis.url);
    await admin.call('CLIENT', 'PAUSE', '4000', 'ALL');
    const second = tenant.shifts[6]!;
    second.end = second.end.replace(/:00([+-])/, ':30$1');
    await waitFor(() => received.every((r) => r.results.length === 2), 'the change while Redis is paused', 30_000);
    await waitFor(async () => (await polls(follower)) > followerPolls, 'the follower polled itself');
    await admin.call('CLIENT', 'UNPAUSE').catch(() => undefined);
    await waitFor(async () => (await leading(replicas[0]!)) + (await leading(replicas[1]!)) === 1, 'one leader again', 30_000);
    const third = tenant.shifts[7]!;
    third.end = third.end.replace(/:00([+-])/, ':30$1');
    await waitFor(() => received.every((r) => r.results.length >= 3), 'the change after Redis is back');
    const after = (await polls(replicas[0]!)) + (await polls(replicas[1]!)) + 3;
    await waitFor(async () => (await polls(replicas[0]!)) + (await polls(replicas[1]!)) >= after, 'three more polls');
    for (const r of received) expect(r.results.map((result) => result.data.shiftChanges.shift.id)).toEqual([first.id, second.id, third.id]);
    await admin.quit();
  });
});
