import { decodeJwt } from 'jose';
import { Agent, request } from 'undici';
import { startEmulator, type Emulator } from '../../tools/emulator';
import { RESOURCES } from '../../src/upstream/resources';
import { testTenant, tokenFor } from '../helpers/fixtures';
import { listsCalled } from '../helpers/subgraph';
import { waitFor } from '../helpers/waitFor';

const A = testTenant('a', { scopes: ['locations.read', 'shifts.read'], locations: 5, shifts: 12 });
const B = testTenant('b', { scopes: ['shifts.read'], locations: 4, shifts: 8 });
const C = testTenant('c', { scopes: ['locations.read'], locations: 2, shifts: 3 });
const LOCATIONS = '/api/public/v1/locations/';
const SHIFTS = '/api/public/v1/shifts/';

interface Res {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any;
}

async function call(url: string, init: { method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string } = {}): Promise<Res> {
  const response = await request(url, { method: init.method ?? 'GET', headers: init.headers, body: init.body });
  const text = await response.body.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.statusCode, headers: response.headers, text, json };
}

function postToken(em: Emulator, fields: Record<string, string>, contentType = 'application/x-www-form-urlencoded'): Promise<Res> {
  return call(em.tokenUrl, { method: 'POST', headers: { 'content-type': contentType }, body: new URLSearchParams(fields).toString() });
}

function list(em: Emulator, shard: number, path: string, token?: string, query = 'page_size=100'): Promise<Res> {
  return call(`${em.shardUrls[shard]}${path}?${query}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
}

let em: Emulator;
let clock = Date.now();
beforeAll(async () => {
  em = await startEmulator({ tenants: [A, B, C], now: () => clock });
});
afterAll(() => em.close());
beforeEach(() => {
  clock = Date.now();
  em.clearFaults();
  em.resetCounters();
});

describe('token endpoint', () => {
  it('issues a bearer JWT bound to the tenant and its shard', async () => {
    const res = await postToken(em, { grant_type: 'client_credentials', client_id: 'client-a', client_secret: 'secret-a-1', scope: 'shifts.read' });
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.json).toEqual({ access_token: expect.any(String), token_type: 'Bearer', expires_in: 900, scope: 'shifts.read' });
    const claims = decodeJwt(res.json.access_token);
    expect(claims).toMatchObject({ api_base: em.shardUrls[0], tenant_id: A.tenantId, scope: 'shifts.read', client_id: 'client-a', iss: em.authUrl });
    expect(claims.exp! - claims.iat!).toBeGreaterThanOrEqual(900);
    expect(typeof claims.jti).toBe('string');
    expect(em.authUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/auth$/);
  });

  it('grants every granted scope when scope is absent or empty', async () => {
    expect(decodeJwt(await tokenFor(em, A)).scope).toBe('locations.read shifts.read');
    expect(decodeJwt(await tokenFor(em, A, '')).scope).toBe('locations.read shifts.read');
  });

  it.each([
    ['wrong secret', { client_id: 'client-a', client_secret: 'secret-b-2' }, 401, 'invalid_client'],
    ['unknown client', { client_id: 'client-z', client_secret: 'secret-a-1' }, 401, 'invalid_client'],
    ['scope not granted', { client_id: 'client-c', client_secret: 'secret-c-3', scope: 'shifts.read' }, 400, 'invalid_scope'],
    ['missing secret', { client_id: 'client-a' }, 400, 'invalid_request'],
  ])('refuses %s', async (_case, fields, status, error) => {
    const res = await postToken(em, { grant_type: 'client_credentials', ...fields });
    expect(res.status).toBe(status);
    expect(res.json.error).toBe(error);
    expect(res.text).not.toContain('secret-');
  });

  it('refuses other grant types, missing grant_type, repeated fields and other content types', async () => {
    const creds = { client_id: 'client-a', client_secret: 'secret-a-1' };
    expect((await postToken(em, { grant_type: 'password', ...creds })).json.error).toBe('unsupported_grant_type');
    expect((await postToken(em, creds)).json.error).toBe('invalid_request');
    const repeated = await call(em.tokenUrl, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=client_credentials&client_id=client-a&client_id=client-a&client_secret=secret-a-1' });
    expect(repeated.json.error).toBe('invalid_request');
    const asJson = await call(em.tokenUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ grant_type: 'client_credentials', ...creds }) });
    expect([asJson.status, asJson.json.error]).toEqual([400, 'invalid_request']);
    expect((await postToken(em, { grant_type: 'client_credentials', ...creds }, 'application/x-www-form-urlencoded; charset=utf-8')).status).toBe(200);
  });

  it('has nothing but the token endpoint', async () => {
    const origin = new URL(em.authUrl).origin;
    expect((await call(`${origin}/identity/o/api/token`, { method: 'POST' })).status).toBe(404);
    expect((await call(`${em.authUrl}/anything`)).status).toBe(404);
    expect((await call(em.tokenUrl)).status).toBe(405);
    expect(em.counters.tokenRequests).toBe(0);
  });
});

describe('shard authentication and scopes', () => {
  it('serves the tenant its own locations', async () => {
    const res = await list(em, 0, LOCATIONS, await tokenFor(em, A));
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json');
    expect(res.json.data.map((l: { id: string }) => l.id)).toEqual(A.locations.map((l) => l.id));
  });

  it('answers 401 without a token, with a forged token, and with the slash-less path 404', async () => {
    const token = await tokenFor(em, A);
    expect((await list(em, 0, LOCATIONS)).status).toBe(401);
    const [header, payload] = token.split('.');
    expect((await list(em, 0, LOCATIONS, `${header}.${payload}.${'A'.repeat(43)}`)).status).toBe(401);
    expect((await list(em, 0, LOCATIONS, 'not-a-jwt')).status).toBe(401);
    expect((await list(em, 0, '/api/public/v1/locations', token)).status).toBe(404);
    expect(em.counters.unauthorized).toBe(3);
  });

  it('refuses an expired token', async () => {
    const token = await tokenFor(em, A);
    clock += 899_000;
    expect((await list(em, 0, LOCATIONS, token)).status).toBe(200);
    clock += 1_000;
    const res = await list(em, 0, LOCATIONS, token);
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toContain('invalid_token');
  });

  it('refuses a token of tenant A on tenant B shard', async () => {
    expect((await list(em, 1, LOCATIONS, await tokenFor(em, A))).status).toBe(401);
    expect((await list(em, 0, LOCATIONS, await tokenFor(em, B))).status).toBe(401);
  });

  it('refuses revoked tokens, per tenant, but not tokens issued afterwards', async () => {
    const [a, b] = [await tokenFor(em, A), await tokenFor(em, B)];
    em.revokeTokens(A.tenantId);
    expect((await list(em, 0, LOCATIONS, a)).status).toBe(401);
    expect((await list(em, 1, LOCATIONS, b)).status).toBe(200);
    expect((await list(em, 0, LOCATIONS, await tokenFor(em, A))).status).toBe(200);
    em.revokeTokens();
    expect((await list(em, 1, LOCATIONS, b)).status).toBe(401);
  });

  it('refuses tokens with the old api_base after a shard move', async () => {
    const local = await startEmulator({ tenants: [A, B] });
    try {
      const old = await tokenFor(local, A);
      local.moveTenant(A.tenantId, 1);
      expect((await list(local, 0, LOCATIONS, old)).status).toBe(401);
      expect((await list(local, 1, LOCATIONS, old)).status).toBe(401);
      const fresh = await tokenFor(local, A);
      expect(decodeJwt(fresh).api_base).toBe(local.shardUrls[1]);
      expect((await list(local, 1, LOCATIONS, fresh)).status).toBe(200);
      expect(local.tenants.find((t) => t.tenantId === A.tenantId)!.shard).toBe(1);
      expect(A.shard).toBe(0); // the caller's fixture is untouched
      expect(() => local.moveTenant(A.tenantId, 2)).toThrow(RangeError);
    } finally {
      await local.close();
    }
  });

  it('answers 403 on shifts without shifts.read, but serves locations', async () => {
    const c = await tokenFor(em, C);
    expect((await list(em, 1, SHIFTS, c)).status).toBe(403);
    expect((await list(em, 1, LOCATIONS, c)).status).toBe(200);
    const narrowed = await tokenFor(em, A, 'locations.read');
    expect((await list(em, 0, SHIFTS, narrowed)).status).toBe(403);
    expect((await list(em, 0, SHIFTS, await tokenFor(em, A))).status).toBe(200);
  });
});

describe('faults, latency, counters, close', () => {
  it('replaces the next matching responses, then serves normally', async () => {
    const token = await tokenFor(em, A);
    em.injectFault({ endpoint: 'locations', status: 429, headers: { 'retry-after': '1' }, times: 2 });
    em.injectFault({ endpoint: 'shifts', body: '{"object":"list","data":[', status: 200 });
    em.injectFault({ endpoint: 'locations', status: 503, tenantId: B.tenantId });
    const first = await list(em, 0, LOCATIONS, token);
    expect([first.status, first.headers['retry-after']]).toEqual([429, '1']);
    expect((await list(em, 0, LOCATIONS, token)).status).toBe(429);
    expect((await list(em, 0, LOCATIONS, token)).status).toBe(200);
    const broken = await list(em, 0, SHIFTS, token);
    expect([broken.status, broken.text]).toEqual([200, '{"object":"list","data":[']);
    expect((await list(em, 1, LOCATIONS, await tokenFor(em, B))).status).toBe(503);
    expect(listsCalled(em.counters.listRequests)).toEqual({ locations: 4, shifts: 1 });
  });

  it('faults the token endpoint, per tenant if asked', async () => {
    em.injectFault({ endpoint: 'token', status: 500, tenantId: B.tenantId });
    expect((await postToken(em, { grant_type: 'client_credentials', client_id: 'client-a', client_secret: 'secret-a-1' })).status).toBe(200);
    expect((await postToken(em, { grant_type: 'client_credentials', client_id: 'client-b', client_secret: 'secret-b-2' })).status).toBe(500);
    expect(em.counters.tokenRequestsByTenant).toEqual({ [A.tenantId]: 1, [B.tenantId]: 1 });
  });

  it('counts every request', async () => {
    const a = await tokenFor(em, A);
    await list(em, 0, LOCATIONS, a, 'page_size=2');
    await list(em, 0, SHIFTS, a, 'page_size=7');
    await list(em, 1, LOCATIONS, a);
    await call(`${em.shardUrls[1]}/nowhere`);
    const { listRequests, listRequestsByTenant, ...rest } = em.counters;
    // Every served list is counted, from 0.
    expect(Object.keys(listRequests)).toEqual(RESOURCES.map((resource) => resource.name));
    expect(listsCalled(listRequests)).toEqual({ locations: 2, shifts: 1 });
    expect(Object.keys(listRequestsByTenant)).toEqual([A.tenantId]);
    expect(listsCalled(listRequestsByTenant[A.tenantId]!)).toEqual({ locations: 2, shifts: 1 });
    expect(rest).toEqual({
      tokenRequests: 1,
      tokenRequestsByTenant: { [A.tenantId]: 1 },
      requestsByShard: [2, 2],
      unauthorized: 1,
      lastListQueries: ['page_size=2', 'page_size=7', 'page_size=100'],
    });
    const held = em.counters;
    em.resetCounters();
    expect(held.tokenRequests).toBe(0);
  });

  it('adds latency, hangs on request and closes with open keep-alive sockets', async () => {
    const local = await startEmulator({ tenants: [A], latencyMs: 120 });
    const agent = new Agent({ keepAliveTimeout: 60_000 });
    const started = Date.now();
    const res = await request(local.tokenUrl, { method: 'POST', dispatcher: agent, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=client_credentials&client_id=client-a&client_secret=secret-a-1' });
    const token = ((await res.body.json()) as { access_token: string }).access_token;
    expect(Date.now() - started).toBeGreaterThanOrEqual(110);
    local.configure({ latencyMs: 0 });
    local.injectFault({ endpoint: 'locations', hang: true });
    let settled = false;
    const hanging = request(`${local.shardUrls[0]}${LOCATIONS}`, { dispatcher: agent, headers: { authorization: `Bearer ${token}` } }).finally(() => {
      settled = true;
    });
    await waitFor(() => local.counters.listRequests.locations === 1, 'the hanging request to arrive');
    // A request the same shard answers after the hanging one arrived: that one is still unanswered.
    const answered = await request(`${local.shardUrls[0]}${SHIFTS}`, { dispatcher: agent, headers: { authorization: `Bearer ${token}` } });
    await answered.body.dump();
    expect(settled).toBe(false);
    const disconnected: string[] = [];
    agent.on('disconnect', (origin) => disconnected.push(new URL(String(origin)).origin));
    // The hanging request cannot end by itself, and the token request's socket is kept
    // alive for a minute: close() resolving at all means it closed both.
    await local.close();
    await expect(hanging).rejects.toThrow();
    await waitFor(() => disconnected.includes(new URL(local.tokenUrl).origin), 'the kept-alive token socket to be closed');
    await agent.close();
  });
});
