import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { UnsecuredJWT } from 'jose';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/observability/logger';
import { startServer, type RunningServer } from '../../src/server';
import { listen } from '../helpers/fixtures';
import { writeTenantsFile } from '../helpers/subgraph';
import { Writable } from 'node:stream';

/**
 * An identity provider under a path prefix that hands out tokens the subgraph must
 * refuse, and a "shard" that counts every request (none may arrive).
 */
const TENANT = 'tttttttt-0000-4000-8000-000000000001';
let claims: Record<string, unknown> = {};
let tokenBody: (() => Record<string, unknown>) | undefined;
let tokenRequests = 0;
let shardHits: IncomingMessage[] = [];
let idp: Server;
let shard: Server;
let server: RunningServer | undefined;
let logs: string[] = [];
let shardOrigin = '';

/** (Re)starts the subgraph against the fake identity provider; a refused token is remembered 10 s, so cases need a fresh one. */
async function restartSubgraph(grantedScopes: string[], env: Record<string, string> = {}): Promise<void> {
  await server?.close();
  const config = loadConfig({
    PORT: '0',
    WFS_AUTH_URL: `http://127.0.0.1:${(idp.address() as AddressInfo).port}/prefix/v2`,
    WFS_TENANTS_FILE: writeTenantsFile([{ tenantId: TENANT, clientId: 'c', clientSecret: 'hostile-test-secret', grantedScopes }]),
    WFS_CURSOR_SECRET: 'hostile-tokens-cursor-secret-0123456789',
    ...env,
  });
  const sink = new Writable({ write: (chunk, _e, cb) => (logs.push(String(chunk)), cb()) });
  server = await startServer(config, { logger: createLogger('info', sink) });
}

beforeAll(async () => {
  idp = createServer((req, res) => {
    let form = '';
    req.on('data', (chunk) => (form += String(chunk)));
    req.on('end', () => {
      // The subgraph's start-up probe names no client: refused as a token endpoint does, and not counted.
      if (!new URLSearchParams(form).get('client_id')) {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"invalid_request"}');
        return;
      }
      tokenRequests += 1;
      if (req.url !== '/prefix/v2/identity/o/api/token' || req.method !== 'POST') {
        res.statusCode = 404;
        res.end();
        return;
      }
      const token = new UnsecuredJWT({ ...claims }).setIssuedAt().setExpirationTime('15m').encode();
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(tokenBody ? tokenBody() : { access_token: token, token_type: 'Bearer', expires_in: 900, scope: 'shifts.read' }));
    });
  });
  shard = createServer((req, res) => {
    shardHits.push(req);
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ object: 'list', data: [{ object: 'location', id: 'l1', name: 'Only' }], has_more: false, next: null, previous: null }));
  });
  await listen(idp);
  shardOrigin = `http://127.0.0.1:${await listen(shard)}`;
  await restartSubgraph(['shifts.read']);
});

afterAll(async () => {
  await server?.close();
  for (const s of [idp, shard]) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

beforeEach(() => {
  tokenRequests = 0;
  shardHits = [];
  logs = [];
  tokenBody = undefined;
});

async function locations() {
  const response = await fetch(server!.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-tenant-id': TENANT },
    body: JSON.stringify({ query: '{ locations { nodes { id } } }' }),
  });
  return (await response.json()) as { data: unknown; errors?: Array<{ message: string; extensions: { code: string } }> };
}

async function expectRefused(code: string) {
  const response = await locations();
  expect(response.errors?.map((e) => e.extensions.code)).toEqual([code]);
  expect(shardHits).toHaveLength(0);
  return response;
}

describe('tokens the subgraph must refuse', () => {
  it('works with a well-formed token under an auth URL with a path prefix', async () => {
    claims = { tenant_id: TENANT, api_base: shardOrigin };
    const response = await locations();
    expect(response.data).toEqual({ locations: { nodes: [{ id: 'l1' }] } });
    expect(shardHits[0]!.headers.authorization).toMatch(/^Bearer /);
    expect(shardHits[0]!.url).toBe('/api/public/v1/locations/?page_size=100');
  });
});

describe.each([
  ['bound to another tenant', () => ({ tenant_id: 'someone-else', api_base: 'http://127.0.0.1:1' }), 'UPSTREAM_MISCONFIGURED'],
  ['with a plain-http api_base off loopback', () => ({ tenant_id: TENANT, api_base: 'http://shard.example.com' }), 'UPSTREAM_MISCONFIGURED'],
  ['with an api_base carrying userinfo', () => ({ tenant_id: TENANT, api_base: 'https://user@shard.example.com' }), 'UPSTREAM_MISCONFIGURED'],
  ['with an api_base path trick', () => ({ tenant_id: TENANT, api_base: `${shardOrigin}/../evil` }), 'UPSTREAM_MISCONFIGURED'],
])('a token %s', (_name, makeClaims, code) => {
  it(`is refused with ${code}, no data call, a configuration error logged, no secret anywhere`, async () => {
    await restartSubgraph(['shifts.read']);
    claims = makeClaims();
    const response = await expectRefused(code);
    await expectRefused(code);
    expect(tokenRequests).toBe(1);
    expect(logs.join('')).toContain('configuration error');
    expect(JSON.stringify(response) + logs.join('')).not.toContain('hostile-test-secret');
  });
});

describe('an api_base on a private address', () => {
  it("is UPSTREAM_MISCONFIGURED; the client is not told the address, the operator's log is", async () => {
    await restartSubgraph(['shifts.read']);
    claims = { tenant_id: TENANT, api_base: 'https://10.20.30.40:8443' };
    const response = await expectRefused('UPSTREAM_MISCONFIGURED');
    expect(response.errors![0]!.message).not.toContain('10.20.30.40');
    expect(logs.join('')).toContain('10.20.30.40');
  });
});

describe('in production, a loopback api_base', () => {
  const production = { NODE_ENV: 'production', WFS_TRUSTED_NETWORK: 'true' };
  afterAll(() => restartSubgraph(['shifts.read']));

  it.each([
    ['an address', () => shardOrigin],
    ['localhost', () => shardOrigin.replace('127.0.0.1', 'localhost')],
  ])('as %s is refused like a private one: UPSTREAM_MISCONFIGURED, no data call', async (_name, apiBase) => {
    await restartSubgraph(['shifts.read'], production);
    claims = { tenant_id: TENANT, api_base: apiBase() };
    await expectRefused('UPSTREAM_MISCONFIGURED');
    expect(logs.join('')).toContain('configuration error');
  });

  it('is served when WFS_API_BASE_ALLOW names it', async () => {
    await restartSubgraph(['shifts.read'], { ...production, WFS_API_BASE_ALLOW: '127.0.0.1' });
    claims = { tenant_id: TENANT, api_base: shardOrigin };
    expect((await locations()).data).toEqual({ locations: { nodes: [{ id: 'l1' }] } });
    expect(shardHits).toHaveLength(1);
  });
});

describe('token responses that are not usable', () => {
  it.each([
    ['no access_token', () => ({ token_type: 'Bearer', expires_in: 900 })],
    ['not a JWT', () => ({ access_token: 'opaque', token_type: 'Bearer', expires_in: 900 })],
  ])('%s is UPSTREAM_BAD_RESPONSE with no data call', async (_name, body) => {
    await restartSubgraph([]);
    tokenBody = body;
    await expectRefused('UPSTREAM_BAD_RESPONSE');
  });

  it.each([
    ['an access_token of 2 MB', /access_token is longer than 16384 characters/],
    ['a scope of 1 MB', /scope is longer than 4096 characters/],
  ])('%s is refused for its length, and the log says so', async (name, why) => {
    await restartSubgraph(['shifts.read']);
    tokenBody =
      name === 'a scope of 1 MB'
        ? () => ({ access_token: new UnsecuredJWT({ tenant_id: TENANT, api_base: shardOrigin }).encode(), token_type: 'Bearer', expires_in: 900, scope: 'shifts.read '.repeat(100_000) })
        : () => ({ access_token: new UnsecuredJWT({ tenant_id: TENANT, api_base: shardOrigin, padding: 'p'.repeat(2_000_000) }).encode(), token_type: 'Bearer', expires_in: 900 });
    await expectRefused('UPSTREAM_BAD_RESPONSE');
    expect(logs.join('')).toMatch(why);
    expect(logs.join('').length).toBeLessThan(100_000);
  });
});

describe('a token with no usable expires_in and no exp claim', () => {
  it.each([
    ['negative', -5],
    ['zero', 0],
    ['missing', undefined],
  ])('expires_in %s: served on the documented default lifetime, one token request', async (_name, expiresIn) => {
    await restartSubgraph([]);
    tokenBody = () => ({ access_token: new UnsecuredJWT({ tenant_id: TENANT, api_base: shardOrigin }).encode(), token_type: 'Bearer', ...(expiresIn !== undefined && { expires_in: expiresIn }) });
    for (let i = 0; i < 10; i += 1) expect((await locations()).errors).toBeUndefined();
    expect(tokenRequests).toBe(1);
    expect(shardHits).toHaveLength(10);
  });
});
