import { once } from 'node:events';
import { Redis } from 'ioredis';
import { UnsecuredJWT } from 'jose';
import { createRedisTokenStore, type RedisTokenStoreHandle, type RedisTokenStoreOperation, type RedisTokenStoreOptions } from '../../src/upstream/token/redisTokenStore';
import { TokenCache } from '../../src/upstream/token/tokenCache';
import type { TokenGrant } from '../../src/upstream/token/tokenEndpoint';
import { freePort, OTHER_TENANT_ID, sleep, TENANT, TENANT_ID } from '../helpers/fixtures';
import { startRedisServer, type RedisTestServer } from '../helpers/redisServer';
import { waitFor } from '../helpers/waitFor';
import { MAX_RECORD_BYTES, openRecord, recordKey, sealRecord, type RejectedRecordReason } from '../../src/upstream/token/tokenRecord';

/*
 * Against a real redis-server: the store's keys, TTLs and Lua scripts, and two
 * TokenCache "replicas" on their own connections sharing one token per tenant.
 */

const tenant = TENANT;

let server: RedisTestServer;
/** A plain client to look at and plant keys behind the store's back. */
let admin: Redis;
const handles: RedisTokenStoreHandle[] = [];
const servers: RedisTestServer[] = [];

beforeAll(async () => {
  server = await startRedisServer();
  servers.push(server);
  admin = new Redis(server.url, { lazyConnect: true });
  await admin.connect();
});

afterAll(async () => {
  await Promise.all(handles.map((handle) => handle.close()));
  await admin?.quit();
  await Promise.all(servers.map((s) => s.stop()));
});

let prefixes = 0;
/** Each test its own key prefix, so tests never see each other's keys. */
const uniquePrefix = () => `test${++prefixes}:`;

/** A store on its own connection (a "replica"), ready before the test uses it. */
const ENCRYPTION_KEY = 'test-redis-record-key-0123456789abcdef';
const SHARD = 'https://s.example.com';

async function connect(options: Partial<RedisTokenStoreOptions> = {}, url = server.url): Promise<RedisTokenStoreHandle> {
  const handle = createRedisTokenStore(url, { encryptionKey: ENCRYPTION_KEY, ...options });
  handles.push(handle);
  if (handle.redis.status !== 'ready') await once(handle.redis, 'ready');
  return handle;
}

/** A token as the endpoint issues it: a JWT bound to its tenant and shard (`name` makes it unique). */
function jwt(name: string, tenantId = TENANT_ID, apiBase = SHARD): string {
  return new UnsecuredJWT({ name, tenant_id: tenantId, api_base: apiBase }).encode();
}

function grant(name: string, lifeMs = 60_000, tenantId = TENANT_ID): TokenGrant {
  const now = Date.now();
  return { accessToken: jwt(name, tenantId), tenantId, apiBase: SHARD, scopes: ['shifts.read'], obtainedAt: now, expiresAt: now + lifeMs };
}

/** The access token of the record under `key`, opened with the test key. */
async function storedToken(key: string): Promise<unknown> {
  const value = await admin.get(key);
  return value === null ? null : (openRecord(recordKey(ENCRYPTION_KEY), key, value) as { accessToken?: unknown } | null)?.accessToken;
}

/** What ioredis answers at once, without queueing, for a command while it has no connection. */
const OFFLINE_REFUSAL = /enableOfflineQueue/;

/** What a store tells: each Redis failure, each refused record, and its outages' starts and ends. */
function errorLog() {
  const errors: Array<{ operation: RedisTokenStoreOperation; error: Error }> = [];
  const rejected: Array<{ reason: RejectedRecordReason; key: string }> = [];
  const availability: Array<'down' | 'up'> = [];
  return {
    errors,
    rejected,
    availability,
    onError: (operation: RedisTokenStoreOperation, error: Error) => errors.push({ operation, error }),
    onRejected: (reason: RejectedRecordReason, key: string) => rejected.push({ reason, key }),
    onDown: () => availability.push('down'),
    onUp: () => availability.push('up'),
  };
}

/** The bytes Redis has sent to all its clients so far (INFO stats). */
async function netOutputBytes(): Promise<number> {
  return Number(/total_net_output_bytes:(\d+)/.exec(await admin.info('stats'))![1]);
}


describe('RedisTokenStore', () => {
  it('round-trips a grant under wfs:token:<tenant>, expiring with the token', async () => {
    const { store } = await connect();
    const written = grant('round-trip-token', 60_000, 'round-trip-tenant');
    await store.write(written);
    expect(await store.read('round-trip-tenant')).toEqual(written);
    const ttl = await admin.pttl('wfs:token:round-trip-tenant');
    expect(ttl).toBeGreaterThan(55_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
    await admin.del('wfs:token:round-trip-tenant');
  });

  it('does not write a token that has already expired', async () => {
    const keyPrefix = uniquePrefix();
    const { store } = await connect({ keyPrefix });
    await store.write(grant('expired-token', -1));
    expect(await admin.exists(`${keyPrefix}token:${TENANT_ID}`)).toBe(0);
    expect(await store.read(TENANT_ID)).toBeNull();
  });

  it('keeps every record sealed: no bearer token in clear in Redis', async () => {
    const keyPrefix = uniquePrefix();
    const { store } = await connect({ keyPrefix });
    const written = grant('sealed-token');
    await store.write(written);
    const raw = (await admin.get(`${keyPrefix}token:${TENANT_ID}`))!;
    expect(raw).toMatch(/^v1\./);
    expect(raw).not.toContain(written.accessToken);
    expect(raw).not.toContain(written.accessToken.split('.')[1]!);
    expect(await store.read(TENANT_ID)).toEqual(written);
    // Another deployment's key (or none) opens nothing.
    const other = await connect({ keyPrefix, encryptionKey: 'another-deployment-key-0123456789abcdef' });
    expect(await other.store.read(TENANT_ID)).toBeNull();
  });

  it('ignores and counts poisoned records by reason (garbage, plain JSON, another tenant, a foreign api_base), with Redis still up', async () => {
    const keyPrefix = uniquePrefix();
    const log = errorLog();
    const evil = 'https://evil.example.net';
    const { store } = await connect({ keyPrefix, ...log, apiBaseAllow: ['s.example.com'] });
    const key = `${keyPrefix}token:${TENANT_ID}`;
    const k = recordKey(ENCRYPTION_KEY);
    const good = grant('shape-token');
    const t2 = grant('t2-token', 60_000, OTHER_TENANT_ID);
    const poisoned: Array<[RejectedRecordReason, string]> = [
      ['seal', 'not json'],
      ['seal', 'v1.AAAA'],
      ['seal', `v1.${Buffer.alloc(64, 7).toString('base64url')}`],
      ['seal', JSON.stringify(good)],
      // Another tenant's record, sealed for its own key, copied here.
      ['seal', sealRecord(k, `${keyPrefix}token:t2`, t2)],
      // Another deployment's record (another WFS_REDIS_KEY) at this very key.
      ['seal', sealRecord(recordKey('another-deployment-key-0123456789abcdef'), key, good)],
      // Sealed for this key, but the token inside is bound to another tenant.
      ['shape', sealRecord(k, key, { ...good, accessToken: jwt('stolen', OTHER_TENANT_ID) })],
      // A foreign api_base, in the record and in the token's claims alike.
      ['shape', sealRecord(k, key, { ...good, accessToken: jwt('foreign', TENANT_ID, evil), apiBase: evil })],
      // The record's api_base disagrees with the token's own claim.
      ['shape', sealRecord(k, key, { ...good, apiBase: evil })],
      // An absurd lifetime.
      ['shape', sealRecord(k, key, { ...good, expiresAt: good.obtainedAt + 400 * 86_400_000 })],
    ];
    for (const [, value] of poisoned) {
      await admin.set(key, value);
      expect(await store.read(TENANT_ID)).toBeNull();
    }
    // Not as a string at all: refused by its type, not reported as a Redis failure (WRONGTYPE).
    await admin.del(key);
    await admin.rpush(key, 'a', 'b');
    expect(await store.read(TENANT_ID)).toBeNull();
    await store.discard(TENANT_ID, good.accessToken);
    expect(await admin.type(key)).toBe('list');
    expect(log.rejected).toEqual([...poisoned.map(([reason]) => ({ reason, key })), { reason: 'shape', key }]);
    // Redis answered every time: no failure, no outage (only the first connection, at start).
    expect(log.errors).toEqual([]);
    expect(log.availability).toEqual(['up']);
    await admin.del(key);
    await admin.set(key, sealRecord(k, key, good));
    expect(await store.read(TENANT_ID)).toEqual(good);
  });

  it(`refuses a value longer than MAX_RECORD_BYTES (${MAX_RECORD_BYTES}) at a token key without reading it`, async () => {
    const keyPrefix = uniquePrefix();
    const log = errorLog();
    const { store } = await connect({ keyPrefix, ...log });
    const key = `${keyPrefix}token:${TENANT_ID}`;
    // 64 MiB: well above the bound (the finding's 500 MB took the read 3.3 s and 1.6 GB of RSS).
    await admin.set(key, Buffer.alloc(64 * 1024 * 1024, 'a'));
    const sent = await netOutputBytes();
    expect(await store.read(TENANT_ID)).toBeNull();
    await store.discard(TENANT_ID, 'any-token');
    // Redis sent a few bytes (the scripts' answers and INFO's), never the value.
    expect((await netOutputBytes()) - sent).toBeLessThan(64 * 1024);
    expect(log.rejected).toEqual([{ reason: 'size', key }]);
    expect(log.errors).toEqual([]);
    expect(await admin.strlen(key)).toBe(64 * 1024 * 1024);
    // A record at the bound is still read (refused for its seal, not its size).
    await admin.set(key, 'x'.repeat(MAX_RECORD_BYTES));
    expect(await store.read(TENANT_ID)).toBeNull();
    expect(log.rejected.at(-1)).toEqual({ reason: 'seal', key });
    await admin.del(key);
  });

  it('refuses a record naming a loopback shard where token responses may not (production), as requestToken does', async () => {
    const keyPrefix = uniquePrefix();
    const key = `${keyPrefix}token:${TENANT_ID}`;
    const loopbackShard = 'http://127.0.0.1:4011';
    const now = Date.now();
    const record: TokenGrant = {
      accessToken: jwt('loopback-token', TENANT_ID, loopbackShard),
      tenantId: TENANT_ID,
      apiBase: loopbackShard,
      scopes: ['shifts.read'],
      obtainedAt: now,
      expiresAt: now + 60_000,
    };
    await admin.set(key, sealRecord(recordKey(ENCRYPTION_KEY), key, record));
    const production = await connect({ keyPrefix, apiBaseLoopback: false, onError: errorLog().onError });
    expect(await production.store.read(TENANT_ID)).toBeNull();
    // Named on the allow-list, the same shard is accepted in production too; outside production it always is.
    const allowed = await connect({ keyPrefix, apiBaseLoopback: false, apiBaseAllow: ['127.0.0.1:4011'] });
    expect(await allowed.store.read(TENANT_ID)).toEqual(record);
    const development = await connect({ keyPrefix });
    expect(await development.store.read(TENANT_ID)).toEqual(record);
  });

  it('discards the token only while it is still the one that was rejected', async () => {
    const keyPrefix = uniquePrefix();
    const { store } = await connect({ keyPrefix });
    const newer = grant('newer-token');
    await store.write(newer);
    await store.discard(TENANT_ID, jwt('older-token'));
    expect(await store.read(TENANT_ID)).toEqual(newer);
    await store.discard(TENANT_ID, newer.accessToken);
    expect(await store.read(TENANT_ID)).toBeNull();
    expect(await admin.exists(`${keyPrefix}token:${TENANT_ID}`)).toBe(0);
  });

  it('gives the refresh lock to one replica at a time', async () => {
    const keyPrefix = uniquePrefix();
    const a = await connect({ keyPrefix });
    const b = await connect({ keyPrefix });
    const releaseA = await a.store.tryLock(TENANT_ID, 10_000);
    expect(releaseA).toEqual(expect.any(Function));
    expect(await b.store.tryLock(TENANT_ID, 10_000)).toBeNull();
    expect(await a.store.tryLock(TENANT_ID, 10_000)).toBeNull();
    // Another tenant's lock is independent.
    expect(await b.store.tryLock(OTHER_TENANT_ID, 10_000)).toEqual(expect.any(Function));
    await releaseA!();
    const releaseB = await b.store.tryLock(TENANT_ID, 10_000);
    expect(releaseB).toEqual(expect.any(Function));
    await releaseB!();
    expect(await admin.exists(`${keyPrefix}lock:${TENANT_ID}`)).toBe(0);
  });

  it('lets the lock of a replica that died expire by itself', async () => {
    const keyPrefix = uniquePrefix();
    const dead = await connect({ keyPrefix });
    const alive = await connect({ keyPrefix });
    expect(await dead.store.tryLock(TENANT_ID, 100)).not.toBeNull();
    expect(await alive.store.tryLock(TENANT_ID, 100)).toBeNull();
    await waitFor(async () => (await admin.exists(`${keyPrefix}lock:${TENANT_ID}`)) === 0, 'the dead replica\'s lock to expire');
    expect(await alive.store.tryLock(TENANT_ID, 10_000)).not.toBeNull();
  });

  it('never releases a lock another replica took after its own expired', async () => {
    const keyPrefix = uniquePrefix();
    const slow = await connect({ keyPrefix });
    const other = await connect({ keyPrefix });
    const releaseSlow = await slow.store.tryLock(TENANT_ID, 100);
    await waitFor(async () => (await admin.exists(`${keyPrefix}lock:${TENANT_ID}`)) === 0, 'the slow replica\'s lock to expire');
    const releaseOther = await other.store.tryLock(TENANT_ID, 10_000);
    expect(releaseOther).not.toBeNull();
    await releaseSlow!();
    expect(await slow.store.tryLock(TENANT_ID, 10_000)).toBeNull();
    expect(await admin.pttl(`${keyPrefix}lock:${TENANT_ID}`)).toBeGreaterThan(9_000);
    await releaseOther!();
    expect(await admin.exists(`${keyPrefix}lock:${TENANT_ID}`)).toBe(0);
  });

  it('answers ping for the readiness probe', async () => {
    const { store } = await connect();
    expect(await store.ping()).toBe(true);
  });

  it.each([
    ['forged, without expiry (the finding: SET wfs:lock:<tenant> x)', 'seal', (key: string) => admin.set(key, 'x')],
    ['forged, with an expiry', 'seal', (key: string) => admin.set(key, 'x', 'PX', 60_000)],
    ["a replica's own lock made permanent (PERSIST)", 'shape', async (key: string, takeRealLock: () => Promise<unknown>) => (await takeRealLock(), admin.persist(key))],
    ["a replica's own lock given a longer life", 'shape', async (key: string, takeRealLock: () => Promise<unknown>) => (await takeRealLock(), admin.pexpire(key, 3_600_000))],
    ['another type', 'shape', (key: string) => admin.rpush(key, 'x')],
    ['64 KiB long', 'size', (key: string) => admin.set(key, 'x'.repeat(64 * 1024))],
  ] as const)('takes over a refresh lock no replica wrote: %s', async (_name, reason, plant) => {
    const keyPrefix = uniquePrefix();
    const key = `${keyPrefix}lock:${TENANT_ID}`;
    const log = errorLog();
    const other = await connect({ keyPrefix });
    const { store } = await connect({ keyPrefix, ...log });
    await plant(key, () => other.store.tryLock(TENANT_ID, 10_000));
    const release = await store.tryLock(TENANT_ID, 10_000);
    expect(release).toEqual(expect.any(Function));
    expect(log.rejected).toEqual([{ reason, key }]);
    // Now a lock as a replica writes it: sealed, expiring, and respected by the others.
    const pttl = await admin.pttl(key);
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(10_000);
    expect(await other.store.tryLock(TENANT_ID, 10_000)).toBeNull();
    await release!();
    expect(await admin.exists(key)).toBe(0);
    expect(log.errors).toEqual([]);
    expect(log.availability).toEqual(['up']);
  });

  it("respects another replica's lock, sealed and expiring, without counting it", async () => {
    const keyPrefix = uniquePrefix();
    const log = errorLog();
    const holder = await connect({ keyPrefix });
    const { store } = await connect({ keyPrefix, ...log });
    const release = await holder.store.tryLock(TENANT_ID, 10_000);
    expect(await store.tryLock(TENANT_ID, 10_000)).toBeNull();
    expect(log.rejected).toEqual([]);
    await release!();
  });

  it('tells an outage once and its end once: Redis dropping the connection, not a refused record', async () => {
    const keyPrefix = uniquePrefix();
    const log = errorLog();
    const handle = await connect({ keyPrefix, ...log });
    await admin.set(`${keyPrefix}token:${TENANT_ID}`, 'forged');
    expect(await handle.store.read(TENANT_ID)).toBeNull();
    expect(log.availability).toEqual(['up']);
    const back = once(handle.redis, 'ready');
    await admin.client('KILL', 'ID', String(await handle.redis.client('ID')));
    await back;
    expect(log.availability).toEqual(['up', 'down', 'up']);
    expect(await handle.store.read(TENANT_ID)).toBeNull();
    expect(log.availability).toEqual(['up', 'down', 'up']);
  });
});

describe('TokenCache replicas sharing one Redis', () => {
  /**
   * A token endpoint that counts and takes 50 ms, each token unique. Time is the subject:
   * a request that takes a while is what callers on both replicas must wait on together.
   */
  function countingEndpoint() {
    let calls = 0;
    const fetchToken = jest.fn(async (): Promise<TokenGrant> => {
      calls += 1;
      // Time is the subject: a token request that takes a while (above).
      await sleep(50);
      return grant(`token-${calls}-${Math.random().toString(36).slice(2)}`, 900_000);
    });
    return fetchToken;
  }

  it('sends one token request for 200 concurrent callers on two replicas, and one more after a shared 401', async () => {
    const keyPrefix = uniquePrefix();
    const fetchToken = countingEndpoint();
    const replicas = await Promise.all(
      [0, 1].map(async () => new TokenCache({ tenants: [tenant], fetchToken, store: (await connect({ keyPrefix })).store, lockPollMs: 10 })),
    );

    const first = await Promise.all(Array.from({ length: 200 }, (_, i) => replicas[i % 2]!.getToken(TENANT_ID)));
    expect(fetchToken).toHaveBeenCalledTimes(1);
    const firstTokens = new Set(first.map((g) => g.accessToken));
    expect(firstTokens.size).toBe(1);
    const [firstToken] = firstTokens;
    expect(await storedToken(`${keyPrefix}token:${TENANT_ID}`)).toBe(firstToken);

    // Both replicas see the upstream refuse the same token, many requests each.
    const renewed = await Promise.all(Array.from({ length: 20 }, (_, i) => replicas[i % 2]!.renewAfterUnauthorized(TENANT_ID, first[i]!)));
    expect(fetchToken).toHaveBeenCalledTimes(2);
    const renewedTokens = new Set(renewed.map((g) => g.accessToken));
    expect(renewedTokens.size).toBe(1);
    expect(renewedTokens.has(firstToken!)).toBe(false);
    expect(await storedToken(`${keyPrefix}token:${TENANT_ID}`)).toBe([...renewedTokens][0]);
    expect(await admin.exists(`${keyPrefix}lock:${TENANT_ID}`)).toBe(0);
  });

  it('refuses a replayed record older than the newest token the replica has held', async () => {
    const keyPrefix = uniquePrefix();
    const key = `${keyPrefix}token:${TENANT_ID}`;
    const fetchToken = countingEndpoint();
    const replica = new TokenCache({ tenants: [tenant], fetchToken, store: (await connect({ keyPrefix })).store, lockPollMs: 10 });
    const plant = (g: TokenGrant) => admin.set(key, sealRecord(recordKey(ENCRYPTION_KEY), key, g), 'PX', 600_000);
    const older = { ...grant('older', 900_000), obtainedAt: Date.now() - 60_000 };
    const newer = grant('newer', 900_000);
    await plant(newer);
    const held = await replica.getToken(TENANT_ID);
    expect(held.accessToken).toBe(newer.accessToken);
    replica.markUsed(held);
    // Someone with write access to Redis puts back an older record, still valid and sealed with our key.
    await plant(older);
    const renewed = await replica.renewAfterUnauthorized(TENANT_ID, held);
    expect(renewed.accessToken).not.toBe(older.accessToken);
    expect(fetchToken).toHaveBeenCalledTimes(1);
  });

  it('remembers refused tokens until they expire: a replayed revoked record is refused after newer tokens came', async () => {
    const keyPrefix = uniquePrefix();
    const key = `${keyPrefix}token:${TENANT_ID}`;
    const fetchToken = countingEndpoint();
    const replica = new TokenCache({ tenants: [tenant], fetchToken, store: (await connect({ keyPrefix })).store, lockPollMs: 10 });
    const first = await replica.getToken(TENANT_ID);
    const revokedRecord = (await admin.get(key))!;
    replica.markUsed(first);
    const second = await replica.renewAfterUnauthorized(TENANT_ID, first); // the first was revoked
    replica.markUsed(second);
    const third = await replica.renewAfterUnauthorized(TENANT_ID, second); // and the second
    replica.markUsed(third);
    // The revoked first record is put back (it is still within its life).
    await admin.set(key, revokedRecord, 'PX', 600_000);
    const fourth = await replica.renewAfterUnauthorized(TENANT_ID, third);
    expect([first, second, third].map((g) => g.accessToken)).not.toContain(fourth.accessToken);
    expect(fetchToken).toHaveBeenCalledTimes(4);
  });

  it('is not locked out by a forged lock without expiry: the replica takes it over and fetches, without waiting out its deadline', async () => {
    const keyPrefix = uniquePrefix();
    const lockKey = `${keyPrefix}lock:${TENANT_ID}`;
    const fetchToken = countingEndpoint();
    const log = errorLog();
    // A wait far longer than the test: only taking the lock over can serve the token.
    const replica = new TokenCache({ tenants: [tenant], fetchToken, store: (await connect({ keyPrefix, ...log })).store, lockWaitMs: 3_600_000, lockPollMs: 10 });
    await admin.set(lockKey, 'x');
    const tokens = await Promise.all(Array.from({ length: 10 }, () => replica.getToken(TENANT_ID)));
    expect(new Set(tokens.map((g) => g.accessToken)).size).toBe(1);
    expect(fetchToken).toHaveBeenCalledTimes(1);
    expect(await storedToken(`${keyPrefix}token:${TENANT_ID}`)).toBe(tokens[0]!.accessToken);
    expect(log.rejected).toEqual([{ reason: 'seal', key: lockKey }]);
    expect(await admin.exists(lockKey)).toBe(0);
  });

  it("fetches alone, once, when a lock that looks like a replica's outlives the wait (a sealed lock put back with an expiry)", async () => {
    const keyPrefix = uniquePrefix();
    const lockKey = `${keyPrefix}lock:${TENANT_ID}`;
    const holder = await connect({ keyPrefix });
    // A real lock, taken by a replica that then died, or put back by someone who can write to Redis.
    expect(await holder.store.tryLock(TENANT_ID, 20_000)).not.toBeNull();
    const fetchToken = countingEndpoint();
    const replica = new TokenCache({ tenants: [tenant], fetchToken, store: (await connect({ keyPrefix })).store, lockWaitMs: 200, lockPollMs: 20 });
    const tokens = await Promise.all(Array.from({ length: 5 }, () => replica.getToken(TENANT_ID)));
    expect(new Set(tokens.map((g) => g.accessToken)).size).toBe(1);
    expect(fetchToken).toHaveBeenCalledTimes(1);
    expect(await storedToken(`${keyPrefix}token:${TENANT_ID}`)).toBe(tokens[0]!.accessToken);
    // The lock is left to expire: it may be a live replica's.
    expect(await admin.pttl(lockKey)).toBeGreaterThan(0);
  });

  it('keeps serving tokens from a replica whose Redis is unreachable, quickly, and reports it', async () => {
    const closedPort = await freePort();
    const log = errorLog();
    const handle = createRedisTokenStore(`redis://127.0.0.1:${closedPort}`, { encryptionKey: ENCRYPTION_KEY, onError: log.onError });
    handles.push(handle);
    const fetchToken = countingEndpoint();
    const cache = new TokenCache({ tenants: [tenant], fetchToken, store: handle.store, lockWaitMs: 200, lockPollMs: 20 });

    const tokens = await Promise.all(Array.from({ length: 20 }, () => cache.getToken(TENANT_ID)));
    const renewed = await cache.renewAfterUnauthorized(TENANT_ID, tokens[0]!);
    // Quickly: every store operation was refused at once, none waited for Redis (a queued command would time out).
    expect(log.errors.filter((e) => e.operation !== 'connection' && !OFFLINE_REFUSAL.test(e.error.message))).toEqual([]);

    // Degraded to this replica's own single flight: one request per refresh.
    expect(new Set(tokens.map((g) => g.accessToken)).size).toBe(1);
    expect(renewed.accessToken).not.toBe(tokens[0]!.accessToken);
    expect(fetchToken).toHaveBeenCalledTimes(2);
    expect(await handle.store.ping()).toBe(false);

    const operations = new Set(log.errors.map((e) => e.operation));
    for (const operation of ['read', 'lock', 'write', 'discard'] as const) expect(operations).toContain(operation);
    for (const { error } of log.errors) {
      expect(`${error.message} ${JSON.stringify(error)}`).not.toContain(tokens[0]!.accessToken);
      expect(`${error.message} ${JSON.stringify(error)}`).not.toContain(renewed.accessToken);
    }
  });

  it('keeps serving tokens when Redis goes away after start', async () => {
    const doomed = await startRedisServer();
    servers.push(doomed);
    const log = errorLog();
    const handle = await connect({ keyPrefix: uniquePrefix(), onError: log.onError }, doomed.url);
    const fetchToken = countingEndpoint();
    const cache = new TokenCache({ tenants: [tenant], fetchToken, store: handle.store, lockWaitMs: 200, lockPollMs: 20 });
    const first = await cache.getToken(TENANT_ID);
    expect(await handle.store.read(TENANT_ID)).toEqual(first);

    const closed = once(handle.redis, 'close');
    await doomed.stop();
    await closed;

    const renewed = await cache.renewAfterUnauthorized(TENANT_ID, first);
    expect(log.errors.filter((e) => e.operation !== 'connection' && !OFFLINE_REFUSAL.test(e.error.message))).toEqual([]);
    expect(renewed.accessToken).not.toBe(first.accessToken);
    expect(fetchToken).toHaveBeenCalledTimes(2);
    expect(log.errors.map((e) => e.operation)).toEqual(expect.arrayContaining(['discard', 'read', 'write']));
    expect(await handle.store.ping()).toBe(false);
  });
});
