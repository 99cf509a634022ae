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
import { errorCodes, foreignUpstreamEnv } from '../helpers/subgraph';

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
  for (const name of ['owner', 'garbage', 'plain-json', 'copied', 'resealed', 'foreign-base', 'foreign-claim']) up.add({ name, locations: LOCATIONS });
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

describe('a poisoned shared token store', () => {
  it.each([
    ['garbage', 'garbage', async () => 'v1.' + Buffer.alloc(80, 1).toString('base64url')],
    ['plain JSON', 'plain-json', async () => JSON.stringify({ ...(await ownerGrant()), tenantId: up.tenant('plain-json').tenantId })],
    ["another tenant's record, copied as is", 'copied', async () => (await admin.get(keyName(up.tenant('owner'))))!],
    ["another tenant's token, resealed for this tenant", 'resealed', async () => sealRecord(key, keyName(up.tenant('resealed')), { ...(await ownerGrant()), tenantId: up.tenant('resealed').tenantId })],
    ['a real token with a foreign api_base', 'foreign-base', async () => sealRecord(key, keyName(up.tenant('foreign-base')), { ...(await ownerGrant()), tenantId: up.tenant('foreign-base').tenantId, apiBase: up.evilOrigin })],
    [
      'a crafted token whose claims name a foreign api_base',
      'foreign-claim',
      async () => {
        const tenant = up.tenant('foreign-claim');
        const now = Date.now();
        const accessToken = new UnsecuredJWT({ tenant_id: tenant.tenantId, api_base: up.evilOrigin }).encode();
        return sealRecord(key, keyName(tenant), { accessToken, tenantId: tenant.tenantId, apiBase: up.evilOrigin, scopes: ['shifts.read'], obtainedAt: now, expiresAt: now + 600_000 });
      },
    ],
  ] as const)('%s: never used, never followed; the replica fetches its own token', async (_name, tenantName, makeRecord) => {
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
    expect(logs.join('')).toContain('not a valid token record');
    // The poisoned record was replaced by the replica's own, sealed.
    const stored = openRecord(key, keyName(tenant), (await admin.get(keyName(tenant)))!) as TokenGrant;
    expect(stored.apiBase).toBe(up.shardOrigin);
  });
});
