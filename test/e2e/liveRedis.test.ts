import type { Client } from 'graphql-ws';
import { Redis } from 'ioredis';
import { startEmulator, type Emulator } from '../../tools/emulator';
import { liveSealingKey } from '../../src/live/redisCoordinator';
import { fingerprint } from '../../src/live/snapshot';
import { seal } from '../../src/upstream/redis/seal';
import { startBuiltServer, type BuiltServer } from '../helpers/builtServer';
import { collect, liveClient, type Received } from '../helpers/liveClient';
import { parseSamples, scrapeText, total } from '../helpers/metrics';
import { startRedisServer, type RedisTestServer } from '../helpers/redisServer';
import { emulatorEnv } from '../helpers/postGraphQL';
import { waitFor } from '../helpers/waitFor';

/**
 * Messages and leases in Redis (docs/live.md, "Several replicas (Redis)"), against the
 * built server as the image runs it (`node --max-semi-space-size=8
 * --max-old-space-size=256 dist/index.js`, WFS_REDIS_URL and WFS_REDIS_KEY set) with a
 * real redis-server: whoever reaches Redis lists the live channels (PUBSUB CHANNELS)
 * and publishes on them, or writes a poll lease. A made-up ADDED shift used to reach
 * the subscriber, `{"changes":[null]}` killed the replica, a huge message was parsed
 * whole, and a lease value without expiry stopped the polls for good. Now each is
 * dropped and counted (`wfs_live_redis_dropped_total`), the replica lives on, and the
 * subscriber gets the real changes only.
 */
const REDIS_KEY = 'e2e-live-redis-key-0123456789abcdefghijklm';
const SHIFT_CHANGES = 'subscription { shiftChanges { kind nodeId shift { id end } } }';

let redis: RedisTestServer;
let emulator: Emulator;
let admin: Redis;
let server: BuiltServer;
let url: string;
let client: Client;
let received: Received;

const metric = async (name: string, labels: Record<string, string> = {}) => total(parseSamples(await scrapeText(url)), name, labels);
/** How often a wait on the metrics scrapes them: each scrape is work for the server and the test. */
const SCRAPE_STEP_MS = 50;
const dropped = (reason: string) => metric('wfs_live_redis_dropped_total', { reason });
const edit = (shift: { end: string }) => (shift.end = shift.end.replace(/:00([+-])/, ':30$1'));

beforeAll(async () => {
  redis = await startRedisServer();
  emulator = await startEmulator();
  admin = new Redis(redis.url);
  server = await startBuiltServer({
    ...emulatorEnv(emulator),
    WFS_REDIS_URL: redis.url,
    WFS_REDIS_KEY: REDIS_KEY,
    WFS_POLL_INTERVAL_SECONDS: '1',
  });
  url = server.url;
  await server.untilReady();
  client = liveClient(url, { 'x-tenant-id': emulator.tenants[0]!.tenantId });
  received = collect(client, SHIFT_CHANGES);
  // The baseline read: from then on the poller delivers what it hears (before it, it hears nothing).
  await waitFor(async () => (await metric('wfs_live_polls_total', { outcome: 'ok' })) >= 1, 'the baseline poll', 15_000, SCRAPE_STEP_MS);
}, 60_000);

afterAll(async () => {
  await client?.dispose();
  await server?.stop();
  admin?.disconnect();
  await emulator?.close();
  await redis?.stop();
});

it('drops a made-up ADDED shift, {"changes":[null]} and oversized messages published on its live channel, counts them, lives on, and delivers the real change only', async () => {
  const [channel, ...others] = (await admin.pubsub('CHANNELS', '*')) as string[];
  expect(channel).toMatch(/^wfs:live:changes:/);
  expect(others).toEqual([]);
  const tenant = emulator.tenants[0]!;
  const real = tenant.shifts[0]!;
  const forgedShift = { id: 'shift_forged', start: real.start, end: real.end, locationId: null, userId: null };
  const forged = { kind: 'ADDED', id: forgedShift.id, record: forgedShift, fingerprint: fingerprint(forgedShift) };
  const key = liveSealingKey(REDIS_KEY);
  const messages = [
    // The finding's message: what a replica published before sealing, made up.
    JSON.stringify({ from: 'attacker', changes: [forged] }),
    '{"changes":[null]}',
    // Sealed with the fleet's key (as if it had leaked) but malformed: still no crash.
    seal(key, channel!, JSON.stringify({ from: 'attacker', seq: 1, at: Date.now(), changes: [null] })),
    // Over the bound, plain and sealed: refused by their size before anything is decoded.
    'x'.repeat(300 * 1024),
    seal(key, channel!, JSON.stringify({ from: 'attacker', seq: 2, at: Date.now(), changes: [{ ...forged, record: { ...forgedShift, userId: 'u'.repeat(300 * 1024) } }] })),
  ];
  for (const message of messages) expect(await admin.publish(channel!, message)).toBe(1);
  await waitFor(async () => (await dropped('unsealed')) === 2 && (await dropped('malformed')) === 1 && (await dropped('oversized')) === 2, 'the five counted', 20_000, SCRAPE_STEP_MS);
  expect(server.alive()).toBe(true);

  const shift = tenant.shifts[5]!;
  edit(shift);
  await waitFor(() => received.results.length >= 1, 'the real change', 15_000);
  expect(received.results).toEqual([{ data: { shiftChanges: { kind: 'UPDATED', nodeId: expect.any(String), shift: { id: shift.id, end: shift.end } } } }]);
  expect(received.error).toBeUndefined();
  expect(server.alive()).toBe(true);
});

it('takes over a poll lease that a value written into Redis by someone else holds, and keeps delivering', async () => {
  await waitFor(async () => (await metric('wfs_live_pollers_leading')) === 1, 'the replica leads', 15_000, SCRAPE_STEP_MS);
  const [lease] = (await admin.keys('wfs:live:lease:*')) as string[];
  expect(lease).toBeDefined();
  // No expiry: before, every replica read "held by another" and never polled again.
  await admin.set(lease!, 'not-a-replica');
  await waitFor(async () => (await dropped('lease')) >= 1, 'the foreign lease counted', 15_000, SCRAPE_STEP_MS);
  await waitFor(async () => (await admin.get(lease!))?.startsWith('v1.') === true, 'the lease taken over');
  expect(await admin.pttl(lease!)).toBeGreaterThan(0);
  const before = received.results.length;
  const shift = emulator.tenants[0]!.shifts[6]!;
  edit(shift);
  await waitFor(() => received.results.length > before, 'the change after the foreign lease', 15_000);
  expect(received.results.slice(before).map((result) => (result.data as { shiftChanges: { shift: { id: string } } }).shiftChanges.shift.id)).toEqual([shift.id]);
  expect(server.alive()).toBe(true);
});

it('holds two Redis connections, shared by the token store and live updates: one for commands, one subscribed', async () => {
  const clients = ((await admin.client('LIST')) as string).trim().split('\n');
  const replica = clients.filter((line) => !/ cmd=client\|list /.test(line));
  expect(replica).toHaveLength(2);
  // The subscriber (sub=1 channel) and the commands connection (sub=0).
  expect(replica.map((line) => /\bsub=(\d+)/.exec(line)![1]).sort()).toEqual(['0', '1']);
  // Both were used: a token record and the lease are in Redis.
  expect(await admin.keys('wfs:token:*')).toHaveLength(1);
});
