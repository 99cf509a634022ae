import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { startEmulator, type Emulator } from '../../tools/emulator';
import { startBuiltServer, type BuiltServer } from '../helpers/builtServer';
import { scrapeTotal } from '../helpers/metrics';
import { startRedisServer, type RedisTestServer } from '../helpers/redisServer';
import { emulatorEnv, errorCodes, postGraphQL } from '../helpers/postGraphQL';

/**
 * The shared token store against someone who can write to Redis without WFS_REDIS_KEY
 * (docs/limits.md, "Time and size bounds"), on the built server as the image runs it (`node
 * --max-semi-space-size=8 --max-old-space-size=256 dist/index.js`, WFS_REDIS_URL and
 * WFS_REDIS_KEY set) with a real redis-server and the emulator. A refresh lock set with
 * no expiry used to make every refresh of that company wait 10 s, answer
 * UPSTREAM_UNAVAILABLE and then fail fast for as long as the key stayed; a 500 MB value
 * at a token key was read whole (3.3 s, RSS 1.6 GB). Now the lock is taken over and the
 * query answered, and the value is refused by its length without a byte of it sent.
 */
const REDIS_KEY = 'e2e-redis-armor-key-0123456789abcdefghijklm';
const QUERY = '{ locations(first: 2) { nodes { id } } }';

let redis: RedisTestServer;
let emulator: Emulator;
let admin: Redis;
let server: BuiltServer;

const metric = (name: string, labels: Record<string, string> = {}) => scrapeTotal(server.url, name, labels);
const query = (tenantId: string) => postGraphQL(server.url, { query: QUERY }, { 'x-tenant-id': tenantId });
/** The bytes Redis has sent to all its clients so far (INFO stats). */
const netOutputBytes = async () => Number(/total_net_output_bytes:(\d+)/.exec(await admin.info('stats'))![1]);
/** The server's peak resident set so far (VmHWM, Linux), in bytes. */
const peakRss = () => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.child.pid}/status`, 'utf8'))![1]) * 1024;

beforeAll(async () => {
  redis = await startRedisServer();
  emulator = await startEmulator();
  admin = new Redis(redis.url);
  server = await startBuiltServer({
    ...emulatorEnv(emulator),
    WFS_REDIS_URL: redis.url,
    WFS_REDIS_KEY: REDIS_KEY,
  });
  await server.untilReady();
}, 60_000);

afterAll(async () => {
  await server?.stop();
  admin?.disconnect();
  await emulator?.close();
  await redis?.stop();
});

it('answers with data for a company whose refresh lock someone set with no expiry (SET wfs:lock:<tenant> x), and counts the forged lock', async () => {
  const tenant = emulator.tenants[0]!;
  await admin.del(`wfs:token:${tenant.tenantId}`);
  await admin.set(`wfs:lock:${tenant.tenantId}`, 'x');
  const response = await query(tenant.tenantId);
  expect(errorCodes(response)).toEqual([]);
  expect(response.data.locations.nodes).toHaveLength(2);
  expect(await metric('wfs_shared_token_store_rejected_records_total', { reason: 'seal' })).toBe(1);
  // Taken over and released: no lock left, and this replica's own record shared.
  expect(await admin.exists(`wfs:lock:${tenant.tenantId}`)).toBe(0);
  expect(await admin.get(`wfs:token:${tenant.tenantId}`)).toMatch(/^v1\./);
  expect(await metric('wfs_shared_token_store_up', { store: 'redis' })).toBe(1);
  expect(server.stderr()).toBe('');
});

it('refuses a 64 MiB value at a token key by its length, without reading it, and fetches its own token', async () => {
  const tenant = emulator.tenants[1]!;
  const key = `wfs:token:${tenant.tenantId}`;
  await admin.set(key, Buffer.alloc(64 * 1024 * 1024, 'a'));
  const sent = await netOutputBytes();
  const peakBefore = peakRss();
  const response = await query(tenant.tenantId);
  expect(errorCodes(response)).toEqual([]);
  expect(response.data.locations.nodes).toHaveLength(2);
  // Redis never sent the value: about 1.3 KB of answers in all (the scripts', INFO's),
  // where the read used to pull 14 to 27 MB before the 1 s command timeout cut it.
  expect((await netOutputBytes()) - sent).toBeLessThan(1024 * 1024);
  // Nor did the replica's memory see it: its peak RSS grew by far less than the value.
  expect(peakRss() - peakBefore).toBeLessThan(16 * 1024 * 1024);
  expect(await metric('wfs_shared_token_store_rejected_records_total', { reason: 'size' })).toBeGreaterThanOrEqual(1);
  // The record is this replica's own now (written over the value), and Redis is up.
  expect(await admin.strlen(key)).toBeLessThan(4_096);
  expect(await metric('wfs_shared_token_store_up', { store: 'redis' })).toBe(1);
  expect(server.alive()).toBe(true);
});
