import { once } from 'node:events';
import { Redis } from 'ioredis';
import { UnsecuredJWT } from 'jose';
import { createRedisTokenStore, type RedisTokenStoreHandle, type RedisTokenStoreOperation, type RedisTokenStoreOptions } from '../../src/upstream/token/redisTokenStore';
import { TokenCache } from '../../src/upstream/token/tokenCache';
import type { TokenGrant } from '../../src/upstream/token/tokenEndpoint';
import { freePort, OTHER_TENANT_ID, sleep, TENANT, TENANT_ID } from '../helpers/fixtures';
import { startRedisServer, type RedisTestServer } from '../helpers/redisServer';
import { waitFor } from '../helpers/waitFor';
import { openRecord, recordKey, sealRecord } from '../../src/upstream/token/tokenRecord';

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

function errorLog() {
  const errors: Array<{ operation: RedisTokenStoreOperation; error: Error }> = [];
  return { errors, onError: (operation: RedisTokenStoreOperation, error: Error) => errors.push({ operation, error }) };
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

  it('ignores and reports poisoned records: garbage, plain JSON, another tenant, a foreign api_base', async () => {
    const keyPrefix = uniquePrefix();
    const log = errorLog();
    const evil = 'https://evil.example.net';
    const { store } = await connect({ keyPrefix, onError: log.onError, apiBaseAllow: ['s.example.com'] });
    const key = `${keyPrefix}token:${TENANT_ID}`;
    const k = recordKey(ENCRYPTION_KEY);
    const good = grant('shape-token');
    const t2 = grant('t2-token', 60_000, OTHER_TENANT_ID);
    const poisoned = [
      'not json',
      'v1.AAAA',
      `v1.${Buffer.alloc(64, 7).toString('base64url')}`,
      JSON.stringify(good),
      // Another tenant's record, sealed for its own key, copied here.
      sealRecord(k, `${keyPrefix}token:t2`, t2),
      // Sealed for this key, but the token inside is bound to another tenant.
      sealRecord(k, key, { ...good, accessToken: jwt('stolen', OTHER_TENANT_ID) }),
      // A foreign api_base, in the record and in the token's claims alike.
      sealRecord(k, key, { ...good, accessToken: jwt('foreign', TENANT_ID, evil), apiBase: evil }),
      // The record's api_base disagrees with the token's own claim.
      sealRecord(k, key, { ...good, apiBase: evil }),
      // An absurd lifetime.
      sealRecord(k, key, { ...good, expiresAt: good.obtainedAt + 400 * 86_400_000 }),
    ];
    for (const value of poisoned) {
      await admin.set(key, value);
      expect(await store.read(TENANT_ID)).toBeNull();
    }
    expect(log.errors.map((e) => e.operation)).toEqual(Array(poisoned.length).fill('read'));
    await admin.set(key, sealRecord(k, key, good));
    expect(await store.read(TENANT_ID)).toEqual(good);
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
