import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, UnsecuredJWT, exportJWK, exportSPKI, generateKeyPair, type CryptoKey } from 'jose';
import { testTenant } from '../helpers/fixtures';
import { createIdentityResolver } from '../../src/graphql/admission/identity';
import { errorCodes, startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';

const A = testTenant('a', { idGroup: '1111', scopes: ['shifts.read'], locations: 4, shifts: 4 });
const B = testTenant('b', { idGroup: '1111', scopes: ['shifts.read'], locations: 4, shifts: 4 });
const QUERY = '{ locations { nodes { id } } }';

let subgraph: TestSubgraph;
afterEach(async () => {
  await subgraph?.close();
});

describe('verified-identity mode (JWT against a real JWKS endpoint)', () => {
  let jwks: Server;
  let sign: (claims: Record<string, unknown>, options?: { issuer?: string; audience?: string; expiresIn?: string }) => Promise<string>;
  let signWithOtherKey: (claims: Record<string, unknown>) => Promise<string>;
  let jwksUrl: string;
  let privateKey: CryptoKey;
  let publicKey: CryptoKey;
  let jwksRequests = 0;

  beforeAll(async () => {
    ({ publicKey, privateKey } = await generateKeyPair('ES256'));
    const other = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    jwks = createServer((_req, res) => {
      jwksRequests += 1;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
    jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/.well-known/jwks.json`;
    sign = (claims, options = {}) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
        .setIssuer(options.issuer ?? 'https://idp.example.com')
        .setAudience(options.audience ?? 'wfs-subgraph')
        .setIssuedAt()
        .setExpirationTime(options.expiresIn ?? '5m')
        .sign(privateKey);
    signWithOtherKey = (claims) => new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).setIssuer('https://idp.example.com').setAudience('wfs-subgraph').setExpirationTime('5m').sign(other.privateKey);
  });
  afterAll(async () => {
    jwks.closeAllConnections();
    await new Promise((resolve) => jwks.close(resolve));
  });

  const env = () => ({ WFS_JWKS_URL: jwksUrl, WFS_JWT_ISSUER: 'https://idp.example.com', WFS_JWT_AUDIENCE: 'wfs-subgraph' });

  it('reads the tenant from the verified token and ignores the tenant header', async () => {
    subgraph = await startTestSubgraph({ tenants: [A, B] }, env());
    const token = await sign({ tenant_id: A.tenantId });
    const response = await subgraph.query(QUERY, {}, { authorization: `Bearer ${token}`, 'x-tenant-id': B.tenantId });
    expect(response.data.locations.nodes.map((n: { id: string }) => n.id)).toEqual(A.locations.map((l) => l.id));
  });

  it('uses a custom tenant claim', async () => {
    subgraph = await startTestSubgraph({ tenants: [A, B] }, { ...env(), WFS_TENANT_CLAIM: 'org' });
    const response = await subgraph.query(QUERY, {}, { authorization: `Bearer ${await sign({ org: B.tenantId })}` });
    expect(response.data.locations.nodes.map((n: { id: string }) => n.id)).toEqual(B.locations.map((l) => l.id));
  });

  it('refuses missing, forged, expired, wrong-audience and claimless tokens with UNAUTHENTICATED, and unknown tenants with FORBIDDEN', async () => {
    subgraph = await startTestSubgraph({ tenants: [A, B] }, env());
    const cases: Array<[Record<string, string>, string]> = [
      [{ 'x-tenant-id': A.tenantId }, 'UNAUTHENTICATED'],
      [{ authorization: `Bearer ${await signWithOtherKey({ tenant_id: A.tenantId })}` }, 'UNAUTHENTICATED'],
      [{ authorization: `Bearer ${await sign({ tenant_id: A.tenantId }, { expiresIn: '-1m' })}` }, 'UNAUTHENTICATED'],
      [{ authorization: `Bearer ${await sign({ tenant_id: A.tenantId }, { audience: 'someone-else' })}` }, 'UNAUTHENTICATED'],
      [{ authorization: `Bearer ${await sign({ sub: 'x' })}` }, 'UNAUTHENTICATED'],
      [{ authorization: 'Bearer not.a.jwt' }, 'UNAUTHENTICATED'],
      [{ authorization: `Bearer ${await sign({ tenant_id: 'unknown-tenant' })}` }, 'FORBIDDEN'],
    ];
    for (const [headers, code] of cases) expect(errorCodes(await subgraph.query(QUERY, {}, headers))).toEqual([code]);
    expect(subgraph.emulator.counters.tokenRequests).toBe(0);
  });

  it('refuses forged tokens: no exp, wrong or missing audience, alg none, HS256 with the public key, expired, unknown key, not yet valid', async () => {
    subgraph = await startTestSubgraph({ tenants: [A, B] }, env());
    const claims = { tenant_id: A.tenantId };
    const base = () => new SignJWT(claims).setIssuer('https://idp.example.com').setAudience('wfs-subgraph').setIssuedAt();
    const spki = await exportSPKI(publicKey);
    const jwkText = JSON.stringify(await exportJWK(publicKey));
    const forged: Array<[string, string]> = [
      ['no exp', await base().setProtectedHeader({ alg: 'ES256', kid: 'k1' }).sign(privateKey)],
      ['wrong audience', await sign(claims, { audience: 'another-app' })],
      ['no audience', await new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).setIssuer('https://idp.example.com').setExpirationTime('5m').sign(privateKey)],
      ['wrong issuer', await sign(claims, { issuer: 'https://evil.example.com' })],
      ['alg none', new UnsecuredJWT(claims).setIssuer('https://idp.example.com').setAudience('wfs-subgraph').setExpirationTime('5m').encode()],
      ['HS256 with the public key (PEM)', await base().setExpirationTime('5m').setProtectedHeader({ alg: 'HS256', kid: 'k1' }).sign(new TextEncoder().encode(spki))],
      ['HS256 with the public key (JWK)', await base().setExpirationTime('5m').setProtectedHeader({ alg: 'HS256', kid: 'k1' }).sign(new TextEncoder().encode(jwkText))],
      ['expired', await sign(claims, { expiresIn: '-2m' })],
      ['unknown key', await signWithOtherKey(claims)],
      ['unknown kid', await base().setExpirationTime('5m').setProtectedHeader({ alg: 'ES256', kid: 'no-such-key' }).sign(privateKey)],
      ['not yet valid', await base().setExpirationTime('10m').setNotBefore('5m').setProtectedHeader({ alg: 'ES256', kid: 'k1' }).sign(privateKey)],
      ['typ of a DPoP proof', await base().setExpirationTime('5m').setProtectedHeader({ alg: 'ES256', kid: 'k1', typ: 'dpop+jwt' }).sign(privateKey)],
      ['typ of a logout token', await base().setExpirationTime('5m').setProtectedHeader({ alg: 'ES256', kid: 'k1', typ: 'logout+jwt' }).sign(privateKey)],
    ];
    for (const [name, token] of forged) {
      const response = await subgraph.query(QUERY, {}, { authorization: `Bearer ${token}` });
      expect([name, errorCodes(response)]).toEqual([name, ['UNAUTHENTICATED']]);
      expect(response.data?.locations ?? null).toBeNull();
    }
    expect(subgraph.emulator.counters.tokenRequests).toBe(0);
    // A valid token still passes, within the small clock tolerance.
    const fresh = await subgraph.query(QUERY, {}, { authorization: `Bearer ${await sign(claims)}` });
    expect(errorCodes(fresh)).toEqual([]);
    // So does one that says it is a JWT or an access token (RFC 9068).
    for (const typ of ['JWT', 'at+jwt', 'application/at+jwt']) {
      const typed = await base().setExpirationTime('5m').setProtectedHeader({ alg: 'ES256', kid: 'k1', typ }).sign(privateKey);
      expect([typ, errorCodes(await subgraph.query(QUERY, {}, { authorization: `Bearer ${typed}` }))]).toEqual([typ, []]);
    }
    expect(jwksRequests).toBeGreaterThan(0);
  });
});

describe('an identity-provider outage (the JWKS endpoint goes down)', () => {
  // jose and the stale bound read Date.now: the clock moves, real timers and sockets do not.
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'clearImmediate', 'setInterval', 'clearInterval', 'setTimeout', 'clearTimeout', 'queueMicrotask', 'hrtime', 'performance'] }));
  afterEach(() => jest.useRealTimers());

  it('keeps verifying with the last good key set for up to an hour, without waiting on the provider each time, then refuses', async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    let provider: 'up' | 'failing' | 'hanging' = 'up';
    let fetches = 0;
    const server = createServer((_req, res) => {
      fetches += 1;
      if (provider === 'hanging') return;
      if (provider === 'failing') return void res.writeHead(503).end();
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const onStale = jest.fn();
    try {
      const identify = createIdentityResolver({
        jwt: { jwksUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`, issuer: 'https://idp.example.com', audience: 'wfs-subgraph', tenantClaim: 'tenant_id' },
        tenantHeader: 'x-tenant-id',
        isConfigured: () => true,
        jwksOptions: { timeoutMs: 300, onStale },
      });
      // Signed at the (moved) clock's now, so only the key set ages.
      const bearer = async () => ({ authorization: `Bearer ${await new SignJWT({ tenant_id: A.tenantId }).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).setIssuer('https://idp.example.com').setAudience('wfs-subgraph').setIssuedAt().setExpirationTime('5m').sign(privateKey)}` });
      const code = (promise: Promise<string>) => promise.then(() => 'ok', (error: { extensions?: { code?: string } }) => error.extensions?.code ?? String(error));

      expect(await identify(await bearer())).toBe(A.tenantId);
      expect(fetches).toBe(1);

      // The cache (10 min) runs out while the provider hangs: one fetch, shared, times out; the last good set stands in.
      provider = 'hanging';
      jest.setSystemTime(Date.now() + 11 * 60_000);
      const headers = await bearer();
      expect(await Promise.all(Array.from({ length: 20 }, () => code(identify(headers))))).toEqual(Array(20).fill('ok'));
      expect(fetches).toBe(2);
      expect(onStale).toHaveBeenCalledTimes(1);
      // And is then used like a fresh one: no request waits on the provider again.
      expect(await code(identify(await bearer()))).toBe('ok');
      expect(fetches).toBe(2);

      // Still down (503) when that runs out too: still served, the set being 22 min old.
      provider = 'failing';
      jest.setSystemTime(Date.now() + 11 * 60_000);
      expect(await code(identify(await bearer()))).toBe('ok');
      expect(fetches).toBe(3);

      // Past an hour since the last good fetch: refused, as without a key set.
      jest.setSystemTime(Date.now() + 40 * 60_000);
      expect(await code(identify(await bearer()))).toBe('UNAUTHENTICATED');

      // The provider is back: verified again at once.
      provider = 'up';
      expect(await code(identify(await bearer()))).toBe('ok');
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('router secret', () => {
  it('answers only requests that carry router-authorization, while health stays open', async () => {
    subgraph = await startTestSubgraph({ tenants: [A] }, { WFS_ROUTER_SECRET: 'router-shared-secret-value' });
    const refused = await subgraph.query(QUERY, {}, { 'x-tenant-id': A.tenantId });
    expect(refused.status).toBe(401);
    expect(errorCodes(refused)).toEqual(['UNAUTHENTICATED']);
    const wrong = await subgraph.query(QUERY, {}, { 'x-tenant-id': A.tenantId, 'router-authorization': 'guess' });
    expect(wrong.status).toBe(401);
    const allowed = await subgraph.query(QUERY, {}, { 'x-tenant-id': A.tenantId, 'router-authorization': 'router-shared-secret-value' });
    expect(allowed.data.locations.nodes).toHaveLength(4);
    const health = await fetch(subgraph.server.url.replace('/graphql', '/health'));
    expect(health.status).toBe(200);
    expect(JSON.stringify(refused)).not.toContain('router-shared-secret-value');
  });
});
