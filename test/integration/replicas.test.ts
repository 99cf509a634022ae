import Redis from 'ioredis';
import { startEmulator, type Emulator } from '../../tools/emulator';
import { startRedisServer } from '../helpers/redisServer';
import { startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';

/**
 * Two stateless replicas behind one load balancer: real redis-server, real HTTP,
 * one emulator. They share tokens (one token request per tenant across both) and
 * cursor keys (a cursor from one replica resumes on the other).
 */
describe('replicas sharing Redis', () => {
  let redis: Awaited<ReturnType<typeof startRedisServer>>;
  let emulator: Emulator;
  let replicas: TestSubgraph[];

  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await redis.stop();
  });
  beforeEach(async () => {
    // Each test has its own emulator (its own signing key): start from an empty Redis.
    const client = new Redis(redis.url);
    await client.flushall();
    await client.quit();
    emulator = await startEmulator({ maxPageSize: 5 });
    const env = { WFS_REDIS_URL: redis.url, WFS_REDIS_KEY: 'replica-redis-record-key-0123456789abcdef', WFS_CURSOR_SECRET: 'shared-replica-cursor-secret-0123456789' };
    replicas = [await startTestSubgraph({}, env, {}, emulator), await startTestSubgraph({}, env, {}, emulator)];
  });
  afterEach(async () => {
    await Promise.all(replicas.map((replica) => replica.close()));
    await emulator.close();
  });

  it('makes one token request per tenant for 200 concurrent queries spread over both replicas', async () => {
    const tenant = emulator.tenants[1]!;
    const responses = await Promise.all(
      Array.from({ length: 200 }, (_, i) => replicas[i % 2]!.query('{ locations(first: 2) { nodes { id } } }', {}, { 'x-tenant-id': tenant.tenantId })),
    );
    expect(responses.every((r) => r.errors === undefined && r.data.locations.nodes.length === 2)).toBe(true);
    expect(emulator.counters.tokenRequestsByTenant[tenant.tenantId]).toBe(1);
    expect(emulator.counters.tokenRequests).toBe(1);
  });

  it('resumes a cursor issued by one replica on the other', async () => {
    const tenant = emulator.tenants[0]!;
    const headers = { 'x-tenant-id': tenant.tenantId };
    const first = await replicas[0]!.query('{ locations(first: 3) { pageInfo { endCursor } } }', {}, headers);
    const next = await replicas[1]!.query('query ($after: String) { locations(first: 3, after: $after) { nodes { id } } }', { after: first.data.locations.pageInfo.endCursor }, headers);
    expect(next.data.locations.nodes.map((n: { id: string }) => n.id)).toEqual(tenant.locations.slice(3, 6).map((l) => l.id));
  });

  it('renews a revoked token once for both replicas', async () => {
    const tenant = emulator.tenants[0]!;
    const headers = { 'x-tenant-id': tenant.tenantId };
    await Promise.all(replicas.map((replica) => replica.query('{ locations(first: 1) { nodes { id } } }', {}, headers)));
    expect(emulator.counters.tokenRequests).toBe(1);
    emulator.revokeTokens(tenant.tenantId);
    const responses = await Promise.all(Array.from({ length: 20 }, (_, i) => replicas[i % 2]!.query('{ locations(first: 1) { nodes { id } } }', {}, headers)));
    expect(responses.every((r) => r.errors === undefined)).toBe(true);
    expect(emulator.counters.tokenRequests).toBe(2);
  });
});
