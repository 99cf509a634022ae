import { once } from 'node:events';
import type { Server as HttpServer } from 'node:http';
import { createServer, type AddressInfo, type Server as NetServer } from 'node:net';
import { request } from 'undici';
import { makeTenant, type Emulator, type EmulatorTenant } from '../../tools/emulator';
import type { TenantCredentials } from '../../src/config';
import type { TokenGrant } from '../../src/upstream/token/tokenEndpoint';

/**
 * The shared test fixtures: tenants, token grants, sleep, free ports, listening and
 * emulator tokens, written once.
 * Tests that need another shape pass options instead of copying these.
 */

const SHARDS = { a: 0, b: 1, c: 1, d: 0, e: 1, f: 0, g: 1 } as const;
type Letter = keyof typeof SHARDS;
const NUMBER: Record<Letter, number> = { a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7 };

/**
 * Test company `letter`: tenant id `aaaaaaaa-0000-4000-8000-000000000001` (b: …0002,
 * and so on), client `client-a`, secret `secret-a-1` (b: `secret-b-2`, …) unless given; shard a, d, f: 0,
 * b, c, e: 1 unless given.
 */
export function testTenant(
  letter: Letter,
  options: { locations: number; shifts: number; scopes?: string[]; shard?: number; secret?: string; idGroup?: string },
): EmulatorTenant {
  return makeTenant({
    tenantId: `${letter.repeat(8)}-${options.idGroup ?? '0000'}-4000-8000-${String(NUMBER[letter]).padStart(12, '0')}`,
    clientId: `client-${letter}`,
    clientSecret: options.secret ?? `secret-${letter}-${NUMBER[letter]}`,
    ...(options.scopes && { grantedScopes: options.scopes }),
    shard: options.shard ?? SHARDS[letter],
    locationCount: options.locations,
    shiftCount: options.shifts,
  });
}

/**
 * The companies every gateway suite (Apollo Gateway, Hive Gateway, Grafbase) serves
 * through the supergraph: two with `shifts.read` on different shards, one without it.
 */
export function gatewayTenants(): { withShifts: EmulatorTenant; other: EmulatorTenant; noShifts: EmulatorTenant } {
  return {
    withShifts: testTenant('d', { locations: 6, shifts: 12, scopes: ['shifts.read'] }),
    other: testTenant('e', { locations: 4, shifts: 8, scopes: ['shifts.read'] }),
    noShifts: testTenant('f', { locations: 3, shifts: 5, scopes: ['locations.read'] }),
  };
}

/** The company of tests that need only its credentials: token cache, Redis store, client, cursors. */
export const TENANT: TenantCredentials = { tenantId: 'tenant-1', clientId: 'client-1', clientSecret: 'secret-1', scope: 'shifts.read' };
export const TENANT_ID = TENANT.tenantId;
/** Another company, for what must not cross from one company to another. */
export const OTHER_TENANT_ID = 'tenant-2';

/** The trusted-header identity of a tenant. */
export const as = (tenant: Pick<EmulatorTenant, 'tenantId'>) => ({ 'x-tenant-id': tenant.tenantId });

/** A token grant as the token endpoint's parser returns it; lives `lifeMs` from now. */
export function tokenGrant(overrides: Partial<TokenGrant> & { lifeMs?: number } = {}): TokenGrant {
  const { lifeMs = 60_000, ...rest } = overrides;
  const now = Date.now();
  return { accessToken: 'token', tenantId: TENANT_ID, apiBase: 'https://shard-1.example.com', scopes: [], obtainedAt: now, expiresAt: now + lifeMs, ...rest };
}

/**
 * Waits `ms` of real time. Only for a test whose subject is time itself (a token
 * expiring, a TTL passing); anything else waits on an event or a counter.
 */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A port that was free a moment ago: listen on port 0, read the port, close. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new Error('no port assigned'))));
    });
  });
}

/** Starts `server` on a free loopback port; resolves with the port. */
export async function listen(server: HttpServer | NetServer): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

/** An access token from the emulator's token endpoint for `tenant` (its granted scopes unless `scope` is given). */
export async function tokenFor(emulator: Pick<Emulator, 'tokenUrl'>, tenant: Pick<EmulatorTenant, 'clientId' | 'clientSecret'>, scope?: string): Promise<string> {
  const response = await request(emulator.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: tenant.clientId, client_secret: tenant.clientSecret, ...(scope !== undefined && { scope }) }).toString(),
  });
  const body = (await response.body.json()) as { access_token?: string };
  if (response.statusCode !== 200 || !body.access_token) throw new Error(`the token endpoint answered ${response.statusCode} for ${tenant.clientId}`);
  return body.access_token;
}
