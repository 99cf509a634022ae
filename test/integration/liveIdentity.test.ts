import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import WebSocket from 'ws';
import { testTenant } from '../helpers/fixtures';
import { collect, liveClient, wsUrl } from '../helpers/liveClient';
import { startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';
import { waitFor } from '../helpers/waitFor';

/**
 * An open subscription's identity is checked again while it is
 * open, so a JWT past `exp` or a signing key withdrawn from the JWKS ends it with
 * UNAUTHENTICATED. The clock jose reads (Date) is moved; real timers and sockets are
 * not; the re-check runs every 50 ms (`identityRecheckMs`) instead of every 30 s.
 * And the connections-per-address bound does not count the router.
 */
const SHIFT_CHANGES = 'subscription { shiftChanges { kind nodeId } }';
const ISSUER = 'https://idp.example.com';
const AUDIENCE = 'wfs-subgraph';

describe('an open subscription whose identity lapses', () => {
  const tenant = testTenant('a', { locations: 2, shifts: 4, scopes: ['shifts.read'] });
  let subgraph: TestSubgraph;
  let jwks: Server;
  let published = true;
  let privateKey: CryptoKey;

  beforeAll(async () => {
    const pair = await generateKeyPair('ES256');
    privateKey = pair.privateKey;
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    jwks = createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: published ? [jwk] : [] }));
    });
    await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
    subgraph = await startTestSubgraph(
      { tenants: [tenant] },
      { WFS_JWKS_URL: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json`, WFS_JWT_ISSUER: ISSUER, WFS_JWT_AUDIENCE: AUDIENCE, LOG_LEVEL: 'warn' },
      { limits: { gate: { identityRecheckMs: 50 } } },
    );
  });

  beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'clearImmediate', 'setInterval', 'clearInterval', 'setTimeout', 'clearTimeout', 'queueMicrotask', 'hrtime', 'performance'] }));
  afterEach(() => {
    jest.useRealTimers();
    published = true;
  });

  afterAll(async () => {
    await subgraph?.close();
    await new Promise((resolve) => jwks.close(resolve));
  });

  const token = (expiresIn: string) =>
    new SignJWT({ tenant_id: tenant.tenantId })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt()
      .setExpirationTime(expiresIn)
      .sign(privateKey);

  it.each([
    ['its JWT passes exp', () => jest.setSystemTime(Date.now() + 10 * 60_000)],
    [
      'its signing key is withdrawn from the JWKS',
      () => {
        // The key set is fetched again once the cache (10 min, from a fetch that may have
        // been at the previous case's moved clock) runs out; the token (1 h) is still in date.
        published = false;
        jest.setSystemTime(Date.now() + 25 * 60_000);
      },
    ],
  ])('ends with UNAUTHENTICATED (a next with the error, then complete) when %s', async (_case, lapse) => {
    const client = liveClient(subgraph.server.url, { authorization: `Bearer ${await token(_case.includes('exp') ? '5m' : '1h')}` });
    try {
      const received = collect(client, SHIFT_CHANGES);
      await waitFor(() => subgraph.server.live.subscriptions === 1, 'subscribed');
      lapse();
      await waitFor(() => received.completed, 'the subscription ended');
      expect(received.error).toBeUndefined();
      expect(received.results.at(-1)?.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
      await waitFor(() => subgraph.server.live.subscriptions === 0, 'its hub subscription closed');
    } finally {
      await client.dispose();
    }
  });
});

describe('connections per address', () => {
  const tenant = testTenant('b', { locations: 1, shifts: 1, scopes: ['shifts.read'] });
  let subgraph: TestSubgraph;
  const sockets: WebSocket[] = [];

  beforeAll(async () => {
    // No router secret: with one set, every upgrade that is accepted carries it, and none is counted.
    subgraph = await startTestSubgraph({ tenants: [tenant] }, { LOG_LEVEL: 'warn' }, { limits: { socket: { connectionsPerAddress: 2, refusalDelayMs: 0 } } });
  });

  afterAll(async () => {
    for (const socket of sockets) socket.terminate();
    await subgraph?.close();
  });

  /** Opens a WebSocket; resolves with 101 once open, or the status of the refusal. */
  const upgrade = (headers: Record<string, string> = {}) =>
    new Promise<number>((resolve) => {
      const socket = new WebSocket(wsUrl(subgraph.server.url), 'graphql-transport-ws', { headers });
      sockets.push(socket);
      socket.on('error', () => undefined);
      socket.once('open', () => resolve(101));
      socket.once('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0));
    });

  it('refuses a third connection from one address with 429', async () => {
    expect(await upgrade()).toBe(101);
    expect(await upgrade()).toBe(101);
    expect(await upgrade()).toBe(429);
  });
});
