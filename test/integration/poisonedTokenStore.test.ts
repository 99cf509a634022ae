import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import { UnsecuredJWT, decodeJwt } from 'jose';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/observability/logger';
import { startServer, type RunningServer } from '../../src/server';
import type { TokenGrant } from '../../src/upstream/token/tokenEndpoint';
import { openRecord, recordKey, sealRecord } from '../../src/upstream/token/tokenRecord';
import { makeLocations, startForeignUpstream, type ForeignTenant, type ForeignUpstream } from '../helpers/foreignUpstream';
import { startRedisServer, type RedisTestServer } from '../helpers/redisServer';
import type { Client } from 'graphql-ws';
import { startEmulator, type Emulator } from '../../tools/emulator';
import { collect, liveClient } from '../helpers/liveClient';
import { scrapeTotal } from '../helpers/metrics';
import { errorCodes, foreignUpstreamEnv, startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';
import { waitFor } from '../helpers/waitFor';

/*
 * A shared token store someone else wrote to (docs/upstream.md, "Shared token records"): records planted in a real
 * redis-server for tenants whose replica has no token yet. Whatever is planted (garbage,
 * another tenant's token, a foreign api_base), the replica ignores it, fetches its own
 * token, answers the query, and no bearer token goes to a foreign host.
 */

const REDIS_KEY = 'poisoned-store-test-key-0123456789abcdef';
const LOCATIONS = makeLocations(3);
const QUERY = '{ locations(first: 3) { nodes { id } } }';

let redis: RedisTestServer;
let admin: Redis;
let up: ForeignUpstream;
let server: RunningServer;
const logs: string[] = [];
const key = recordKey(REDIS_KEY);
const keyName = (tenant: ForeignTenant) => `wfs:token:${tenant.tenantId}`;

beforeAll(async () => {
  redis = await startRedisServer();
  admin = new Redis(redis.url);
  up = await startForeignUpstream();
  for (const name of ['owner', 'garbage', 'plain-json', 'copied', 'resealed', 'foreign-base', 'foreign-claim', 'other-deployment']) up.add({ name, locations: LOCATIONS });
  const config = loadConfig(
    foreignUpstreamEnv(up, {
      WFS_CURSOR_SECRET: 'poisoned-store-cursor-secret-0123456789',
      WFS_REDIS_URL: redis.url,
      WFS_REDIS_KEY: REDIS_KEY,
      WFS_API_BASE_ALLOW: new URL(up.shardOrigin).host,
    }),
  );
  const sink = new Writable({ write: (chunk, _e, callback) => (logs.push(String(chunk)), callback()) });
  server = await startServer(config, { logger: createLogger('info', sink) });
});

afterAll(async () => {
  await server?.close();
  await up?.close();
  await admin?.quit();
  await redis?.stop();
});

async function query(tenant: ForeignTenant) {
  const response = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-tenant-id': tenant.tenantId },
    body: JSON.stringify({ query: QUERY }),
  });
  return (await response.json()) as { data?: any; errors?: Array<{ extensions: { code: string } }> };
}

/** The owner's real record, as the replica wrote it. */
async function ownerGrant(): Promise<TokenGrant> {
  const owner = up.tenant('owner');
  if (owner.tokenRequests === 0) expect(errorCodes(await query(owner))).toEqual([]);
  return openRecord(key, keyName(owner), (await admin.get(keyName(owner)))!) as TokenGrant;
}

const plant = (tenant: ForeignTenant, value: string) => admin.set(keyName(tenant), value, 'PX', 600_000);

/** The log lines about a refused record at `key`, parsed. */
const rejectedLines = (key: string) =>
  logs
    .join('')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { msg: string; key?: string; reason?: string; level: number })
    .filter((line) => line.key === key);

describe('a poisoned shared token store', () => {
  it.each([
    ['garbage', 'garbage', 'seal', async () => 'v1.' + Buffer.alloc(80, 1).toString('base64url')],
    ['plain JSON', 'plain-json', 'seal', async () => JSON.stringify({ ...(await ownerGrant()), tenantId: up.tenant('plain-json').tenantId })],
    ["another tenant's record, copied as is", 'copied', 'seal', async () => (await admin.get(keyName(up.tenant('owner'))))!],
    ["another tenant's token, resealed for this tenant", 'resealed', 'shape', async () => sealRecord(key, keyName(up.tenant('resealed')), { ...(await ownerGrant()), tenantId: up.tenant('resealed').tenantId })],
    ['a real token with a foreign api_base', 'foreign-base', 'shape', async () => sealRecord(key, keyName(up.tenant('foreign-base')), { ...(await ownerGrant()), tenantId: up.tenant('foreign-base').tenantId, apiBase: up.evilOrigin })],
    [
      'a crafted token whose claims name a foreign api_base',
      'foreign-claim',
      'shape',
      async () => {
        const tenant = up.tenant('foreign-claim');
        const now = Date.now();
        const accessToken = new UnsecuredJWT({ tenant_id: tenant.tenantId, api_base: up.evilOrigin }).encode();
        return sealRecord(key, keyName(tenant), { accessToken, tenantId: tenant.tenantId, apiBase: up.evilOrigin, scopes: ['shifts.read'], obtainedAt: now, expiresAt: now + 600_000 });
      },
    ],
  ] as const)('%s: never used, never followed; the replica fetches its own token', async (_name, tenantName, reason, makeRecord) => {
    const tenant = up.tenant(tenantName);
    await plant(tenant, await makeRecord());
    const ownerTokens = new Set(up.issuedTokens.filter((t) => decodeJwt(t).tenant_id === up.tenant('owner').tenantId));
    const response = await query(tenant);
    expect(errorCodes(response)).toEqual([]);
    expect(response.data.locations.nodes).toHaveLength(3);
    expect(tenant.tokenRequests).toBe(1);
    expect(up.evilHits).toEqual([]);
    // Every call for this tenant carried its own token, never the owner's.
    for (const call of tenant.calls) expect(ownerTokens.has(call.authorization!.replace(/^Bearer /, ''))).toBe(false);
    expect(rejectedLines(keyName(tenant))).toEqual([expect.objectContaining({ reason })]);
    // The poisoned record was replaced by the replica's own, sealed.
    const stored = openRecord(key, keyName(tenant), (await admin.get(keyName(tenant)))!) as TokenGrant;
    expect(stored.apiBase).toBe(up.shardOrigin);
  });
});

describe('a record sealed by another deployment (another WFS_REDIS_KEY, the same key prefix)', () => {
  it('is counted and logged once as failing its seal, and Redis stays up: wfs_shared_token_store_up 1', async () => {
    const tenant = up.tenant('other-deployment');
    const owner = await ownerGrant();
    const theirs = sealRecord(recordKey('the-other-deployments-redis-key-0123456789'), keyName(tenant), { ...owner, tenantId: tenant.tenantId });
    const before = await scrapeTotal(server.url, 'wfs_shared_token_store_rejected_records_total', { reason: 'seal' });
    await plant(tenant, theirs);
    const response = await query(tenant);
    expect(errorCodes(response)).toEqual([]);
    expect(response.data.locations.nodes).toHaveLength(3);
    expect(tenant.tokenRequests).toBe(1);
    // Redis answered every command: the gauge the "Redis down" alert reads stays 1.
    expect(await scrapeTotal(server.url, 'wfs_shared_token_store_up', { store: 'redis' })).toBe(1);
    expect(logs.join('')).not.toContain('shared token store unavailable');
    // Read twice in one refresh (before and after taking the lock): both counted, one line.
    expect((await scrapeTotal(server.url, 'wfs_shared_token_store_rejected_records_total', { reason: 'seal' })) - before).toBe(2);
    const lines = rejectedLines(keyName(tenant));
    expect(lines).toEqual([expect.objectContaining({ reason: 'seal', msg: expect.stringContaining('failed its seal check: written by another deployment with a different WFS_REDIS_KEY') })]);
    // And the record is ours now: written over with this deployment's own.
    expect((openRecord(key, keyName(tenant), (await admin.get(keyName(tenant)))!) as TokenGrant).tenantId).toBe(tenant.tenantId);
  });
});

describe('two deployments on one Redis, each with its own WFS_REDIS_KEY_PREFIX', () => {
  const SHIFT_CHANGES = 'subscription { shiftChanges { kind nodeId shift { id end } } }';
  let shared: RedisTestServer;
  let sharedAdmin: Redis;
  let emulator: Emulator;
  const deployments: TestSubgraph[] = [];
  const clients: Client[] = [];

  beforeAll(async () => {
    shared = await startRedisServer();
    sharedAdmin = new Redis(shared.url);
    emulator = await startEmulator();
    for (const [prefix, redisKey] of [
      ['blue:', 'blue-deployment-redis-key-0123456789abcdef'],
      ['green:', 'green-deployment-redis-key-0123456789abcdef'],
    ] as const) {
      deployments.push(
        await startTestSubgraph({}, { WFS_REDIS_URL: shared.url, WFS_REDIS_KEY: redisKey, WFS_REDIS_KEY_PREFIX: prefix, LOG_LEVEL: 'warn' }, { live: { pollIntervalMs: 100 } }, emulator),
      );
    }
  });

  afterAll(async () => {
    await Promise.all(clients.map((client) => client.dispose()));
    await Promise.all(deployments.map((deployment) => deployment.close()));
    await emulator?.close();
    sharedAdmin?.disconnect();
    await shared?.stop();
  });

  it("write only their own keys (token records, live leases and channels) and never read each other's", async () => {
    const tenant = emulator.tenants[0]!;
    for (const deployment of deployments) {
      expect(errorCodes(await deployment.query('{ locations(first: 1) { nodes { id } } }', {}, { 'x-tenant-id': tenant.tenantId }))).toEqual([]);
      const client = liveClient(deployment.server.url, { 'x-tenant-id': tenant.tenantId });
      clients.push(client);
      collect(client, SHIFT_CHANGES);
    }
    await waitFor(async () => (await sharedAdmin.keys('*')).filter((name) => name.includes(':live:lease:')).length === 2, 'a poll lease of each deployment');
    const keys = (await sharedAdmin.keys('*')).sort();
    expect(keys.filter((name) => !name.startsWith('blue:') && !name.startsWith('green:'))).toEqual([]);
    for (const prefix of ['blue:', 'green:']) {
      expect(keys).toContain(`${prefix}token:${tenant.tenantId}`);
      expect(keys.filter((name) => name.startsWith(`${prefix}live:lease:`))).toHaveLength(1);
    }
    const channels = (await sharedAdmin.pubsub('CHANNELS', '*')) as string[];
    expect(channels.map((name) => name.replace(/changes:.*/, 'changes:')).sort()).toEqual(['blue:live:changes:', 'green:live:changes:']);
    // Each deployment's record opens with its own key only, and neither refused the other's.
    for (const deployment of deployments) {
      expect(await scrapeTotal(deployment.server.url, 'wfs_shared_token_store_rejected_records_total')).toBe(0);
      expect(await scrapeTotal(deployment.server.url, 'wfs_live_redis_dropped_total')).toBe(0);
      expect(await scrapeTotal(deployment.server.url, 'wfs_shared_token_store_up', { store: 'redis' })).toBe(1);
    }
  });
});
