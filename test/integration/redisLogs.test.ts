import type { Client } from 'graphql-ws';
import { Redis } from 'ioredis';
import type { Counter } from 'prom-client';
import { liveSealingKey } from '../../src/live/redisCoordinator';
import { seal } from '../../src/upstream/redis/seal';
import { collect, liveClient } from '../helpers/liveClient';
import { startRedisServer, type RedisTestServer } from '../helpers/redisServer';
import { livePollersLeading, startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';
import { counterTotal, waitFor } from '../helpers/waitFor';

/**
 * What a replica on a real redis-server writes to its log about Redis, as on-call reads
 * it: a warning for each kind of live message or poll lease it drops, naming the Redis
 * key and the likely cause, once per key and reason however many arrive, and never
 * what the value held; and for live updates, one line when Redis stops answering and
 * one when it is back (as the token store's "Redis is back").
 */
const REDIS_KEY = 'redis-logs-test-key-0123456789abcdefghijk';
const SHIFT_CHANGES = 'subscription { shiftChanges { kind nodeId } }';
/** Text the values carry: it must never reach a log line. */
const CONTENT_MARKER = 'content-marker-7f3a91';

let redis: RedisTestServer;
let admin: Redis;
let subgraph: TestSubgraph;
let client: Client;

interface Line {
  level: number;
  msg: string;
  key?: string;
  reason?: string;
}
const lines = (): Line[] =>
  subgraph.logs
    .join('')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Line);
const dropped = (reason: string) => counterTotal(subgraph.server.metrics.registry.getSingleMetric('wfs_live_redis_dropped_total') as Counter<string>, { reason });

beforeAll(async () => {
  redis = await startRedisServer();
  admin = new Redis(redis.url);
  subgraph = await startTestSubgraph({}, { WFS_REDIS_URL: redis.url, WFS_REDIS_KEY: REDIS_KEY, LOG_LEVEL: 'info' }, { live: { pollIntervalMs: 100, minLeaseMs: 1_000 } });
  client = liveClient(subgraph.server.url, { 'x-tenant-id': subgraph.emulator.tenants[0]!.tenantId });
  collect(client, SHIFT_CHANGES);
  await waitFor(async () => (await admin.pubsub('CHANNELS', 'wfs:live:changes:*')).length === 1 && (await livePollersLeading(subgraph.server)) === 1, 'the replica listens and leads');
});

afterAll(async () => {
  await client?.dispose();
  await subgraph?.close();
  admin?.disconnect();
  await redis?.stop();
});

describe('a replica logs what it drops from Redis', () => {
  it('warns once per key and reason for live messages and poll leases, naming the key and the likely cause, never the content', async () => {
    const [channel] = (await admin.pubsub('CHANNELS', 'wfs:live:changes:*')) as string[];
    const message = JSON.stringify({ from: 'someone', seq: 1, at: Date.now(), changes: [{ kind: 'ADDED', id: CONTENT_MARKER }] });
    for (let i = 0; i < 3; i++) await admin.publish(channel!, message);
    await admin.publish(channel!, seal(liveSealingKey('another-deployments-key-0123456789abcdefg'), channel!, message));
    await waitFor(async () => (await dropped('unsealed')) === 3 && (await dropped('forged')) === 1, 'the four messages dropped');

    const [lease] = (await admin.keys('wfs:live:lease:*')) as string[];
    await admin.set(lease!, CONTENT_MARKER);
    await waitFor(async () => (await dropped('lease')) >= 1, 'the foreign lease dropped');
    await waitFor(async () => (await admin.get(lease!))?.startsWith('v1.') === true, 'the lease taken over');

    const warnings = lines().filter((line) => line.level === 40 && (line.key === channel || line.key === lease));
    expect(warnings.map(({ key, reason }) => ({ key, reason }))).toEqual([
      { key: channel, reason: 'unsealed' },
      { key: channel, reason: 'forged' },
      { key: lease, reason: 'lease' },
    ]);
    expect(warnings[1]!.msg).toMatch(/another deployment on the same WFS_REDIS_KEY_PREFIX with a different WFS_REDIS_KEY, or tampering/);
    expect(subgraph.logs.join('')).not.toContain(CONTENT_MARKER);
  });

  it('says when Redis stops answering live updates, and when it answers again', async () => {
    const down = 'live updates: Redis does not answer';
    const back = 'live updates: Redis is back';
    expect(lines().filter((line) => line.msg.startsWith(down) || line.msg.startsWith(back))).toEqual([]);
    // Writes (the poll lease's script, PUBLISH) wait until UNPAUSE: the replica's lease
    // command times out while its connections stay up, so only an answer can say Redis is back.
    await admin.call('CLIENT', 'PAUSE', '60000', 'WRITE');
    try {
      await waitFor(() => lines().some((line) => line.msg.startsWith(down)), 'the outage line');
    } finally {
      await admin.call('CLIENT', 'UNPAUSE');
    }
    await waitFor(() => lines().some((line) => line.msg.startsWith(back)), 'the line saying Redis is back');
    const outage = lines().filter((line) => line.msg.startsWith(down) || line.msg.startsWith(back));
    expect(outage.map((line) => ({ level: line.level, msg: line.msg }))).toEqual([
      { level: 40, msg: expect.stringContaining('polls for its own subscribers until it does') },
      { level: 30, msg: 'live updates: Redis is back; sharing polls with the other replicas again' },
    ]);
  });
});
