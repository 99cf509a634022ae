import { MockAgent } from 'undici';
import { WfsClient } from '../../src/upstream/client';
import { locations } from '../../src/upstream/resources';
import { TokenCache } from '../../src/upstream/token/tokenCache';
import type { TokenGrant } from '../../src/upstream/token/tokenEndpoint';

/*
 * docs/operations.md, "Memory per company": every per-company (and per-origin) structure of the REST side is
 * bounded or cleaned when idle. Thousands of tenants, each told by a hostile token
 * endpoint that it lives on its own shard origin; then idle; then the sizes.
 */

const TENANTS = 3_000;
const path = '/api/public/v1/locations/?page_size=100';
const tenantId = (i: number) => `t${i}`;
const origin = (i: number) => `https://shard-${i}.example.com`;

it('keeps breakers, Retry-After windows, bulkheads, shared calls and refused tokens bounded, and drops them when idle', async () => {
  let now = 1_000_000;
  const agent = new MockAgent();
  agent.disableNetConnect();
  let issued = 0;
  const fetchToken = async (tenant: { tenantId: string }): Promise<TokenGrant> => {
    issued += 1;
    const i = Number(tenant.tenantId.slice(1));
    return { accessToken: `tok-${issued}`, tenantId: tenant.tenantId, apiBase: origin(i), scopes: [], obtainedAt: now, expiresAt: now + 900_000 };
  };
  const tokens = new TokenCache({ tenants: Array.from({ length: TENANTS }, (_, i) => ({ tenantId: tenantId(i), clientId: 'c', clientSecret: 's', scope: '' })), fetchToken, now: () => now });
  const client = new WfsClient({ tokens, dispatcher: agent, now: () => now, retry: { maxRetries: 0 } });

  // A third of the shards answer 503 with a year's Retry-After (a failure for their breaker
  // and a shard window), a third 429 with an hour's (a tenant window), a third 200.
  for (let i = 0; i < TENANTS; i += 1) {
    const reply = agent.get(origin(i)).intercept({ path });
    if (i % 3 === 0) reply.reply(503, '', { headers: { 'retry-after': '31536000' } });
    else if (i % 3 === 1) reply.reply(429, '', { headers: { 'retry-after': '3600' } });
    else reply.reply(200, { object: 'list', data: [], has_more: false, next: null, previous: null });
  }
  const outcomes = await Promise.allSettled(Array.from({ length: TENANTS }, (_, i) => client.listPage(tenantId(i), locations)));
  expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(TENANTS / 3);
  agent.assertNoPendingInterceptors();

  let footprint = client.footprint();
  expect(footprint.breakers).toBeLessThanOrEqual(256); // 3 000 origins were called
  expect(footprint.windows).toBe((2 * TENANTS) / 3); // all still in force: capped at 60 s and 300 s
  expect(footprint.bulkheads).toBe(0); // nothing in flight
  expect(footprint.inFlight).toBe(0);

  // One tenant whose tokens keep being refused (each after serving calls: revoked).
  for (let n = 0; n < 100; n += 1) {
    const grant = await tokens.getToken(tenantId(2));
    tokens.markUsed(grant);
    await tokens.renewAfterUnauthorized(tenantId(2), grant);
  }
  expect(tokens.rejectedCount).toBeLessThanOrEqual(32);

  // Idle past every window and token: the next window opened sweeps out the ended ones.
  now += 1_000_000;
  agent.get(origin(1)).intercept({ path }).reply(429, '', { headers: { 'retry-after': '10' } });
  await expect(client.listPage(tenantId(1), locations)).rejects.toMatchObject({ code: 'UPSTREAM_RATE_LIMITED' });
  footprint = client.footprint();
  expect(footprint.windows).toBe(1);
  expect(footprint.breakers).toBeLessThanOrEqual(256);
  expect(footprint.bulkheads).toBe(0);
  // The refused tokens of that tenant have expired: the next one refused leaves only itself.
  const grant = await tokens.getToken(tenantId(2));
  tokens.markUsed(grant);
  await tokens.renewAfterUnauthorized(tenantId(2), grant);
  expect(tokens.rejectedCount).toBe(1);
  await agent.close();
});
