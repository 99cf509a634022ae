import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Writable } from 'node:stream';
import { loadConfig } from '../../src/config';
import { startEmulator } from '../../tools/emulator';
import { createLogger } from '../../src/observability/logger';
import { startServer, type RunningServer } from '../../src/server';
import { DEFAULT_TIMEOUTS, createUpstreamAgent } from '../../src/upstream/transport/http';
import { makeLocations, startForeignUpstream, type ForeignTenant, type ForeignTenantSpec, type ForeignUpstream } from '../helpers/foreignUpstream';
import { errorCodes, foreignUpstreamEnv, startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';

/*
 * The token's life over real HTTP (docs/upstream.md, "Token lifetime" and "Token endpoint faults"): odd lifetimes, a 503 storm and
 * Retry-After from the token endpoint, a hanging token endpoint, revocations, and
 * api_base claims that lead to private networks. The subgraph runs on a frozen clock
 * (AppOverrides.now) that each test moves, against the independent fake upstream;
 * connections are observed through the guarded connector (no outside network).
 */

let up: ForeignUpstream;
let server: RunningServer;
let now = Date.now();
const logs: string[] = [];
const logEvents = new EventEmitter();
/** Host names the connector was asked to connect to. */
const connects: string[] = [];
/** Names the connector resolved, and what the fake DNS answered. */
const resolved: string[] = [];

const LOCATIONS = makeLocations(3);
const QUERY = '{ locations(first: 3) { nodes { id } } }';

// Knobs the fault tenants read at request time.
let storm = false;
const stormAttemptsAt: number[] = [];
let outage = false;
const outageAttemptsAt: number[] = [];
let hang = false;
let releaseHang: (() => void) | undefined;

const ODD_LIFETIMES: Array<[string, (body: Record<string, unknown>) => Record<string, unknown>]> = [
  ['missing', ({ expires_in: _dropped, ...body }) => body],
  ['zero', (body) => ({ ...body, expires_in: 0 })],
  ['negative', (body) => ({ ...body, expires_in: -5 })],
  ['a string', (body) => ({ ...body, expires_in: 'soon' })],
  ['a numeric string', (body) => ({ ...body, expires_in: '900' })],
  ['absurdly large', (body) => ({ ...body, expires_in: 1e12 })],
  ['fractional', (body) => ({ ...body, expires_in: 899.5 })],
  ['null', (body) => ({ ...body, expires_in: null })],
];

const PRIVATE_API_BASES = [
  'https://169.254.169.254',
  'https://2852039166',
  'https://10.0.0.1',
  'https://[fd00:ec2::254]',
  'https://[::ffff:169.254.169.254]',
  'https://[64:ff9b::a00:1]',
  'https://100.64.0.1',
];

function answer(res: ServerResponse, status: number, headers: Record<string, string> = {}): true {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ error: status === 401 ? 'invalid_client' : 'temporarily_unavailable' }));
  return true;
}

beforeAll(async () => {
  up = await startForeignUpstream();
  const specs: ForeignTenantSpec[] = [
    { name: 'plain', locations: LOCATIONS },
    ...ODD_LIFETIMES.map(([name, tokenResponse]) => ({ name: `lifetime-${name}`, locations: LOCATIONS, tokenResponse })),
    {
      name: 'storm',
      locations: LOCATIONS,
      tokenFault: (_req: IncomingMessage, res: ServerResponse) => {
        if (!storm) return false;
        stormAttemptsAt.push(now);
        return answer(res, 503);
      },
    },
    {
      name: 'outage',
      locations: LOCATIONS,
      tokenFault: (_req: IncomingMessage, res: ServerResponse) => {
        outageAttemptsAt.push(now);
        return outage ? answer(res, 503) : false;
      },
    },
    { name: 'retry-after-503', locations: LOCATIONS, tokenFault: (_req, res) => answer(res, 503, { 'retry-after': '120' }) },
    { name: 'retry-after-429', locations: LOCATIONS, tokenFault: (_req, res) => answer(res, 429, { 'retry-after': '30' }) },
    {
      name: 'hang',
      locations: LOCATIONS,
      tokenFault: () => (hang ? new Promise<boolean>((resolve) => (releaseHang = () => resolve(false))) : false),
    },
    { name: 'refused', locations: LOCATIONS, tokenFault: (_req, res) => answer(res, 401) },
    ...PRIVATE_API_BASES.map((apiBase, i) => ({ name: `private-${i}`, locations: LOCATIONS, claims: () => ({ api_base: apiBase }) })),
    { name: 'rebind', locations: LOCATIONS, claims: () => ({ api_base: 'https://rebind.test' }) },
  ];
  for (const spec of specs) up.add(spec);
  const config = loadConfig(
    foreignUpstreamEnv(up, {
      WFS_CURSOR_SECRET: 'token-lifecycle-cursor-secret-0123456789',
      LOG_LEVEL: 'debug',
    }),
  );
  const sink = new Writable({
    write(chunk, _encoding, callback) {
      const line = String(chunk);
      logs.push(line);
      logEvents.emit('line', line);
      callback();
    },
  });
  const dispatcher = createUpstreamAgent(DEFAULT_TIMEOUTS, {
    allowList: [],
    // The fake DNS: every name here leads to a private address.
    resolve: async (hostname) => {
      resolved.push(hostname);
      return [{ address: '10.0.0.1', family: 4 }];
    },
    onConnect: (hostname) => connects.push(hostname),
  });
  server = await startServer(config, { logger: createLogger('debug', sink), dispatcher, now: () => now });
});

afterAll(async () => {
  releaseHang?.();
  await server?.close();
  await up?.close();
});

async function query(tenant: ForeignTenant, text = QUERY) {
  const response = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-tenant-id': tenant.tenantId },
    body: JSON.stringify({ query: text }),
  });
  return (await response.json()) as { data?: any; errors?: Array<{ message: string; extensions: { code: string; retryAfterSeconds?: number } }> };
}

const failedLines = (tenant: ForeignTenant) => logs.filter((line) => line.includes('token request failed') && line.includes(tenant.tenantId)).length;

/** Resolves once `condition` holds, checked now and after each log line. */
function logged(condition: () => boolean): Promise<void> {
  if (condition()) return Promise.resolve();
  return new Promise((resolve) => {
    const listener = () => {
      if (!condition()) return;
      logEvents.off('line', listener);
      resolve();
    };
    logEvents.on('line', listener);
  });
}

/** Resolves on the first log line that satisfies `match` from now on. */
function nextLog(match: (line: string) => boolean): Promise<string> {
  return new Promise((resolve) => {
    const listener = (line: string) => {
      if (!match(line)) return;
      logEvents.off('line', listener);
      resolve(line);
    };
    logEvents.on('line', listener);
  });
}

describe('odd token lifetimes (expires_in)', () => {
  it.each(ODD_LIFETIMES.map(([name]) => name))('expires_in %s: queries served, one token request per token life (from the exp claim)', async (name) => {
    const tenant = up.tenant(`lifetime-${name}`);
    const start = now;
    for (let i = 0; i < 10; i += 1) expect(errorCodes(await query(tenant))).toEqual([]);
    // 400 s later: a 300 s default would have expired; the token's own 900 s (exp - iat) has not.
    now = start + 400_000;
    for (let i = 0; i < 10; i += 1) expect(errorCodes(await query(tenant))).toEqual([]);
    expect(tenant.tokenRequests).toBe(1);
    // Past its life: exactly one more.
    now = start + 1_000_000;
    for (let i = 0; i < 10; i += 1) expect(errorCodes(await query(tenant))).toEqual([]);
    expect(tenant.tokenRequests).toBe(2);
  });
});

describe('token endpoint faults', () => {
  it('answers 503 for a minute inside the refresh window: every query served on the valid token, attempts spaced', async () => {
    const tenant = up.tenant('storm');
    const start = now;
    expect(errorCodes(await query(tenant))).toEqual([]);
    now = start + 700_000; // refresh window of a 900 s token: 675 s .. 870 s
    storm = true;
    let served = 0;
    for (let second = 0; second < 60; second += 1) {
      const response = await query(tenant);
      if (errorCodes(response).length === 0) served += 1;
      // Let each background refresh fail (and be logged) before time moves on.
      await logged(() => failedLines(tenant) === stormAttemptsAt.length);
      now += 1_000;
    }
    storm = false;
    expect(served).toBe(60);
    expect(stormAttemptsAt.length).toBeGreaterThanOrEqual(3);
    expect(stormAttemptsAt.length).toBeLessThanOrEqual(10);
    const gaps = stormAttemptsAt.slice(1).map((at, i) => at - stormAttemptsAt[i]!);
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(1_500);
  });

  it('answers 503 for 17 s (no Retry-After) to a company without a token: served again within 5 s of the recovery, attempts spaced', async () => {
    const tenant = up.tenant('outage');
    const start = now;
    outage = true;
    let servedAt: number | undefined;
    // A query every 250 ms: during the outage, then until one is served.
    while (servedAt === undefined) {
      if (now - start >= 17_000) outage = false;
      const response = await query(tenant);
      if (errorCodes(response).length === 0) servedAt = now;
      await logged(() => failedLines(tenant) === outageAttemptsAt.filter((at) => at - start < 17_000).length);
      now += 250;
      expect(now - start).toBeLessThan(60_000);
    }
    expect(servedAt - (start + 17_000)).toBeLessThanOrEqual(5_000);
    const gaps = outageAttemptsAt.slice(1).map((at, i) => at - outageAttemptsAt[i]!);
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(1_500);
  });

  it.each([
    ['retry-after-503', 'UPSTREAM_UNAVAILABLE', 120],
    ['retry-after-429', 'UPSTREAM_RATE_LIMITED', 30],
  ] as const)('%s: Retry-After honoured, no attempt inside the window, fail fast with the seconds left', async (name, code, seconds) => {
    const tenant = up.tenant(name);
    const first = await query(tenant);
    expect(first.errors?.[0]?.extensions).toEqual({ code, retryAfterSeconds: seconds });
    const left: number[] = [];
    for (let i = 1; i <= 5; i += 1) {
      now += (seconds * 1000) / 6;
      const response = await query(tenant);
      expect(errorCodes(response)).toEqual([code]);
      left.push(response.errors![0]!.extensions.retryAfterSeconds!);
    }
    expect(tenant.tokenRequests).toBe(1);
    expect(left).toEqual([...left].sort((a, b) => b - a));
    expect(left.at(-1)).toBeLessThanOrEqual(Math.ceil(seconds / 6));
    now += seconds * 1000;
    await query(tenant);
    expect(tenant.tokenRequests).toBe(2);
  });

  it('hangs: queries served while the token is usable, then fail fast; the request in flight goes on and serves the next query', async () => {
    const tenant = up.tenant('hang');
    const start = now;
    expect(errorCodes(await query(tenant))).toEqual([]);
    now = start + 700_000;
    hang = true;
    expect(errorCodes(await query(tenant))).toEqual([]); // starts the background refresh, which hangs
    expect(tenant.tokenRequests).toBe(2);
    now = start + 880_000; // the token is no longer usable; the hanging request has outlived the usual answer time
    for (let i = 0; i < 5; i += 1) expect(errorCodes(await query(tenant))).toEqual(['UPSTREAM_UNAVAILABLE']);
    expect(tenant.tokenRequests).toBe(2);
    hang = false;
    const obtained = nextLog((line) => line.includes('token obtained') && line.includes(tenant.tenantId));
    releaseHang!();
    await obtained;
    expect(errorCodes(await query(tenant))).toEqual([]);
    expect(tenant.tokenRequests).toBe(2);
  });

  it('refused credentials: the client gets the code and a neutral message, the operator gets the hint in the log', async () => {
    const tenant = up.tenant('refused');
    const response = await query(tenant);
    expect(errorCodes(response)).toEqual(['UPSTREAM_UNAUTHORIZED']);
    expect(response.errors![0]!.message).not.toMatch(/WFS_|tenants file|clientSecret/i);
    expect(logs.join('')).toMatch(/configuration error.*WFS_TENANTS_FILE/);
    expect(logs.join('')).not.toContain(tenant.clientSecret);
  });
});

describe('api_base leading to private networks', () => {
  it.each(PRIVATE_API_BASES.map((apiBase, i) => [apiBase, i] as const))('%s: UPSTREAM_MISCONFIGURED, no connection attempt', async (_apiBase, i) => {
    const tenant = up.tenant(`private-${i}`);
    const before = connects.length;
    const response = await query(tenant);
    expect(errorCodes(response)).toEqual(['UPSTREAM_MISCONFIGURED']);
    expect(response.errors![0]!.message).not.toMatch(/WFS_/);
    // Only the token endpoint (loopback) was connected to, if anything.
    expect(connects.slice(before).filter((host) => host !== '127.0.0.1')).toEqual([]);
    expect(tenant.calls).toEqual([]);
  });

  it('a name that resolves to a private address: refused at connect time, no bearer token sent', async () => {
    const tenant = up.tenant('rebind');
    const response = await query(tenant);
    expect(errorCodes(response)).toEqual(['UPSTREAM_MISCONFIGURED']);
    expect(resolved).toContain('rebind.test');
    expect(tenant.calls).toEqual([]);
    expect(up.evilHits).toEqual([]);
  });
});

describe('revocations (emulator)', () => {
  let subgraph: TestSubgraph;
  afterEach(async () => subgraph?.close());

  it('a second revocation soon after the first locks nobody out: each revoked token is renewed at once', async () => {
    subgraph = await startTestSubgraph({});
    const tenant = subgraph.emulator.tenants[0]!;
    const headers = { 'x-tenant-id': tenant.tenantId };
    expect(errorCodes(await subgraph.query(QUERY, {}, headers))).toEqual([]);
    for (let round = 0; round < 2; round += 1) {
      subgraph.emulator.revokeTokens(tenant.tenantId);
      const responses = await Promise.all(Array.from({ length: 20 }, () => subgraph.query(QUERY, {}, headers)));
      expect(responses.map(errorCodes)).toEqual(Array(20).fill([]));
    }
    expect(subgraph.emulator.counters.tokenRequests).toBe(3);
  });

  it('demo mode: a request without the tenant header is answered for the first demo company, and says so', async () => {
    const emulator = await startEmulator();
    const demoTenant = emulator.tenants[0]!.tenantId;
    try {
      subgraph = await startTestSubgraph({}, {}, { defaultTenant: demoTenant }, emulator);
    const bare = (await subgraph.query(QUERY)) as { extensions?: Record<string, unknown> };
    expect(bare.extensions).toEqual({ demoTenant });
    await subgraph.query(QUERY);
    const named = (await subgraph.query(QUERY, {}, { 'x-tenant-id': demoTenant })) as { extensions?: Record<string, unknown> };
    expect(named.extensions?.demoTenant).toBeUndefined();
    expect(subgraph.logs.filter((line) => line.includes('demo mode: a request named no tenant'))).toHaveLength(1);
    } finally {
      await subgraph.close();
      await emulator.close();
    }
  });
});
