import Redis from 'ioredis';
import type { Client } from 'graphql-ws';
import type { Counter } from 'prom-client';
import { startEmulator, type Emulator } from '../../tools/emulator';
import { collect, liveClient, type Received } from '../helpers/liveClient';
import { startRedisServer } from '../helpers/redisServer';
import { livePolls, livePollersLeading, startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';
import { counterTotal, waitFor } from '../helpers/waitFor';

const SHIFT_CHANGES = 'subscription { shiftChanges { kind nodeId shift { id end } } }';

/**
 * Two replicas on one real redis-server and one emulator, subscribers on both: one
 * replica polls each list for the fleet (a lease in Redis) and the other hears its
 * changes; a lease value no replica wrote is taken over; with Redis paused both poll,
 * and no client gets a change twice; when the leader goes, the other takes over.
 * Polls every 100 ms (the server's options in ms, not WFS_POLL_INTERVAL_SECONDS), so
 * each step is a few polls, and every wait is on a condition. Leases of at least 1 s
 * (not 5 s): ten intervals, so a poll made late by a loaded machine keeps its lease;
 * no step waits for one to expire (a leader that goes gives its lease back;
 * test/integration/redisCoordinator.test.ts takes over one that was not).
 */
const POLL_MS = 100;
const LEASE_MS = 1_000;
describe('live updates across replicas through Redis', () => {
  let redis: Awaited<ReturnType<typeof startRedisServer>>;
  let emulator: Emulator;
  let replicas: TestSubgraph[];
  const clients: Client[] = [];

  const polls = (replica: TestSubgraph) => livePolls(replica.server);
  const leading = (replica: TestSubgraph) => livePollersLeading(replica.server);
  const dropped = (replica: TestSubgraph, reason: string) => counterTotal(replica.server.metrics.registry.getSingleMetric('wfs_live_redis_dropped_total') as Counter<string>, { reason });
  const edit = (shift: { end: string }) => (shift.end = shift.end.replace(/:00([+-])/, ':30$1'));

  beforeAll(async () => {
    redis = await startRedisServer();
    emulator = await startEmulator();
    const env = { WFS_REDIS_URL: redis.url, WFS_REDIS_KEY: 'replica-redis-record-key-0123456789abcdef', WFS_CURSOR_SECRET: 'shared-replica-cursor-secret-0123456789', LOG_LEVEL: 'error' };
    const options = { live: { pollIntervalMs: POLL_MS, minLeaseMs: LEASE_MS } };
    replicas = [await startTestSubgraph({}, env, options, emulator), await startTestSubgraph({}, env, options, emulator)];
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
    edit(first);
    await waitFor(() => received.every((r) => r.results.length === 1), 'all twenty got the change');
    expect(received.every((r) => r.results[0]!.data.shiftChanges.shift.id === first.id)).toBe(true);
    // Two more intervals: the leader polled, the follower never did.
    const until = (await polls(leader)) + 2;
    await waitFor(async () => (await polls(leader)) >= until, 'two more polls of the leader');
    expect(await polls(follower)).toBe(followerPolls);
    expect((await polls(leader)) - leaderPolls).toBeGreaterThanOrEqual(3);

    // A lease value no replica wrote, without expiry (it used to stop every replica's
    // polls for good): the next replica to poll counts it, takes the lease over, and
    // the fleet goes on with one leader.
    const admin = new Redis(redis.url);
    const [lease] = await admin.keys('wfs:live:lease:*');
    await admin.set(lease!, 'not-a-replica');
    await waitFor(async () => (await dropped(replicas[0]!, 'lease')) + (await dropped(replicas[1]!, 'lease')) >= 1, 'the foreign lease counted');
    await waitFor(async () => (await admin.get(lease!))?.startsWith('v1.') === true, 'the lease taken over');
    expect(await admin.pttl(lease!)).toBeGreaterThan(0);
    await waitFor(async () => (await leading(replicas[0]!)) + (await leading(replicas[1]!)) === 1, 'one leader after the foreign lease');
    const second = tenant.shifts[6]!;
    edit(second);
    await waitFor(() => received.every((r) => r.results.length === 2), 'the change after the foreign lease');

    // Redis stops taking writes (leases, PUBLISH) until told: each replica polls for its
    // own subscribers, and the changes they published meanwhile arrive when it answers
    // again; none twice. (WRITE, not ALL: under ALL, Redis 7.0 blocks UNPAUSE too.)
    await admin.call('CLIENT', 'PAUSE', '60000', 'WRITE');
    try {
      const third = tenant.shifts[7]!;
      edit(third);
      await waitFor(() => received.every((r) => r.results.length === 3), 'the change while Redis is paused', 30_000);
      await waitFor(async () => (await polls(follower)) > followerPolls, 'the follower polled itself');
    } finally {
      await admin.call('CLIENT', 'UNPAUSE');
    }
    await waitFor(async () => (await leading(replicas[0]!)) + (await leading(replicas[1]!)) === 1, 'one leader again', 30_000);
    const fourth = tenant.shifts[8]!;
    edit(fourth);
    await waitFor(() => received.every((r) => r.results.length >= 4), 'the change after Redis is back');
    const after = (await polls(replicas[0]!)) + (await polls(replicas[1]!)) + 3;
    await waitFor(async () => (await polls(replicas[0]!)) + (await polls(replicas[1]!)) >= after, 'three more polls');
    const ids = [first.id, second.id, tenant.shifts[7]!.id, fourth.id];
    for (const r of received) expect(r.results.map((result) => result.data.shiftChanges.shift.id)).toEqual(ids);

    // The leader goes: the other replica takes the lease within a lease and polls for its own subscribers.
    const nowLeading = (await leading(replicas[0]!)) === 1 ? replicas[0]! : replicas[1]!;
    const staying = nowLeading === replicas[0] ? replicas[1]! : replicas[0]!;
    const stayingReceived = received.slice(nowLeading === replicas[0] ? 10 : 0, nowLeading === replicas[0] ? 20 : 10);
    await nowLeading.close();
    await waitFor(async () => (await leading(staying)) === 1, 'the other replica leads');
    const fifth = tenant.shifts[9]!;
    edit(fifth);
    await waitFor(() => stayingReceived.every((r) => r.results.length === 5), 'the change after the failover');
    for (const r of stayingReceived) expect(r.results.map((result) => result.data.shiftChanges.shift.id)).toEqual([...ids, fifth.id]);
    await admin.quit();
  });
});
