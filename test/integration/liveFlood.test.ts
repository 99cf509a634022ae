import WebSocket from 'ws';
import type { Counter } from 'prom-client';
import { demoTenants } from '../../tools/emulator';
import { wsUrl } from '../helpers/liveClient';
import { startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';
import { counterTotal, waitFor } from '../helpers/waitFor';

const SHIFT_CHANGES = 'subscription { shiftChanges { kind nodeId shift { id end } } }';
const ROUTER_SECRET = 'router-secret-0123456789abcdefghijklmnop';

/** A raw graphql-transport-ws socket from `localAddress` (loopback has them all: 127.0.0.2, ...). */
interface Raw {
  readonly socket: WebSocket;
  readonly messages: any[];
  readonly closed: { code?: number };
}

/** Opens a socket from `localAddress`: the socket, or the HTTP status and Retry-After of a refused upgrade, and how long it took. */
async function open(url: string, localAddress: string, headers: Record<string, string> = {}): Promise<{ raw?: Raw; status?: number; retryAfter?: string; ms: number }> {
  const started = performance.now();
  const socket = new WebSocket(wsUrl(url), 'graphql-transport-ws', { headers, localAddress });
  const messages: any[] = [];
  const closed: { code?: number } = {};
  socket.on('message', (data) => messages.push(JSON.parse(String(data))));
  socket.on('close', (code) => (closed.code = code));
  socket.on('error', () => undefined);
  return new Promise((resolve) => {
    socket.once('open', () => resolve({ raw: { socket, messages, closed }, ms: performance.now() - started }));
    socket.once('unexpected-response', (_req, res) => {
      res.resume();
      socket.terminate();
      resolve({ status: res.statusCode ?? 0, retryAfter: String(res.headers['retry-after']), ms: performance.now() - started });
    });
  });
}

async function acked(raw: Raw, tenantId: string): Promise<void> {
  raw.socket.send(JSON.stringify({ type: 'connection_init', payload: { headers: { 'x-tenant-id': tenantId } } }));
  await waitFor(() => raw.messages.some((m) => m.type === 'connection_ack'), 'connection_ack');
}

/**
 * Opens connections from `localAddress` until the server refuses the upgrade (the strikes
 * it counts as connections end on its side may lag the client's view of the close); each
 * one still accepted goes to `accepted`. The refusal.
 */
async function refusedUpgrade(url: string, localAddress: string, accepted: (raw: Raw) => unknown): Promise<Awaited<ReturnType<typeof open>>> {
  let refusal: Awaited<ReturnType<typeof open>> | undefined;
  await waitFor(async () => {
    const attempt = await open(url, localAddress);
    if (attempt.raw) {
      await accepted(attempt.raw);
      return false;
    }
    refusal = attempt;
    return true;
  }, `an upgrade from ${localAddress} refused`);
  return refusal!;
}

/** A connection that sends a malformed message and is closed for it (4400). */
async function misbehave(url: string, localAddress: string, headers: Record<string, string> = {}): Promise<void> {
  const { raw } = await open(url, localAddress, headers);
  raw!.socket.send('{"type": "connection_init"');
  await waitFor(() => raw!.closed.code !== undefined, 'closed for a malformed message');
  expect(raw!.closed.code).toBe(4400);
}

/**
 * A subscription flood's own costs, with the real emulator and server on loopback and
 * raw sockets from distinct loopback addresses (so each test's address starts clean):
 * the per-address bound on misbehaving connections, messages after a close not read,
 * and subscription documents checked once per text.
 */
describe('live updates under a flood: per-address bound and cheap refusals', () => {
  let subgraph: TestSubgraph;
  let tenantId: string;
  const sockets: WebSocket[] = [];
  const metric = (name: string) => subgraph.server.metrics.registry.getSingleMetric(name) as Counter<string>;
  const refused = (reason: string) => counterTotal(metric('wfs_live_subscriptions_refused_total'), { reason });

  beforeAll(async () => {
    subgraph = await startTestSubgraph({ tenants: demoTenants() }, { WFS_MAX_COST: '5000', LOG_LEVEL: 'warn' }, {
      live: { pollIntervalMs: 100 },
      limits: { socket: { addressStrikes: 6, addressBlockMs: 600, refusalDelayMs: 300 } },
    });
    tenantId = subgraph.emulator.tenants[0]!.tenantId;
  });
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.terminate();
    await waitFor(() => subgraph.server.live.subscriptions === 0, 'every subscription ended');
  });
  afterAll(() => subgraph.close());

  it('refuses upgrades from an address past its strikes before the handshake (429, Retry-After, after a pause), from that address only, until the block ends', async () => {
    const before = await refused('address_blocked');
    // A protocol violation earns 5 strikes: two are past 6.
    for (let i = 0; i < 2; i++) await misbehave(subgraph.server.url, '127.0.0.2');
    // The server counts a strike when the connection is over on its side: until it has,
    // an upgrade is still accepted (and kept open, so it adds no strike of its own).
    const refusal = await refusedUpgrade(subgraph.server.url, '127.0.0.2', (raw) => sockets.push(raw.socket));
    expect(refusal).toMatchObject({ status: 429, retryAfter: expect.stringMatching(/^[12]$/) });
    expect(refusal.ms).toBeGreaterThanOrEqual(250);
    expect(await refused('address_blocked')).toBeGreaterThan(before);

    // Another address is served meanwhile, subscription and all.
    const other = await open(subgraph.server.url, '127.0.0.3');
    sockets.push(other.raw!.socket);
    await acked(other.raw!, tenantId);
    other.raw!.socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: SHIFT_CHANGES } }));
    await waitFor(() => subgraph.server.live.subscriptions === 1, 'subscribed from another address');

    // The block ends (600 ms): the address connects again. Time is the subject: the block's length.
    await new Promise((resolve) => setTimeout(resolve, 700));
    const again = await open(subgraph.server.url, '127.0.0.2');
    expect(again.raw).toBeDefined();
    sockets.push(again.raw!.socket);
    await acked(again.raw!, tenantId);
  });

  it('counts a refused identity as 1 strike, not a violation\'s 5', async () => {
    for (let i = 0; i < 6; i++) {
      const { raw } = await open(subgraph.server.url, '127.0.0.9');
      expect(raw).toBeDefined();
      raw!.socket.send(JSON.stringify({ type: 'connection_init', payload: { headers: { 'x-tenant-id': 'no-such-company' } } }));
      await waitFor(() => raw!.closed.code !== undefined, 'refused');
      expect(raw!.closed.code).toBe(4403);
    }
    // Six strikes of six: still open.
    const seventh = await open(subgraph.server.url, '127.0.0.9');
    expect(seventh.raw).toBeDefined();
    sockets.push(seventh.raw!.socket);
  });

  it('counts nothing against connections that behave: many from one address (a gateway, screens behind one NAT) all open', async () => {
    for (let i = 0; i < 10; i++) {
      const { raw } = await open(subgraph.server.url, '127.0.0.4');
      expect(raw).toBeDefined();
      await acked(raw!, tenantId);
      raw!.socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: SHIFT_CHANGES } }));
      await waitFor(() => subgraph.server.live.subscriptions === 1, 'subscribed');
      raw!.socket.close(1000);
      await waitFor(() => raw!.closed.code !== undefined && subgraph.server.live.subscriptions === 0, 'closed by the client');
    }
  });

  it('reads nothing a client sent after its connection was closed for a malformed message', async () => {
    const before = await refused('document');
    const { raw } = await open(subgraph.server.url, '127.0.0.5');
    sockets.push(raw!.socket);
    await acked(raw!, tenantId);
    raw!.socket.send('{"type": "subscribe"');
    // Each of these, if read, would be refused for its document.
    for (let i = 0; i < 50; i++) raw!.socket.send(JSON.stringify({ id: String(i), type: 'subscribe', payload: { query: 'subscription { nope }' } }));
    await waitFor(() => raw!.closed.code !== undefined, 'closed');
    expect(raw!.closed.code).toBe(4400);
    expect(await refused('document')).toBe(before);
    expect(raw!.messages.filter((m) => m.type === 'error' || m.type === 'next')).toEqual([]);
  });

  it('estimates the cost of a document it already knows with the variables of each subscribe', async () => {
    const { raw } = await open(subgraph.server.url, '127.0.0.6');
    sockets.push(raw!.socket);
    await acked(raw!, tenantId);
    const nested = 'subscription ($n: Int) { shiftChanges { shift { location { shifts(first: $n) { nodes { location { shifts(first: $n) { nodes { id } } } } } } } } }';
    const subscribe = (id: string, n: number) => raw!.socket.send(JSON.stringify({ id, type: 'subscribe', payload: { query: nested, variables: { n } } }));
    subscribe('small', 2);
    subscribe('large', 100);
    subscribe('small-again', 2);
    await waitFor(() => subgraph.server.live.subscriptions === 2 && raw!.messages.some((m) => m.type === 'complete'), 'two accepted, one refused');
    // The refusal: a `next` with the error, then `complete`.
    const refusal = raw!.messages.filter((m) => m.id === 'large');
    expect(refusal).toEqual([
      { id: 'large', type: 'next', payload: { errors: [expect.objectContaining({ extensions: expect.objectContaining({ code: 'GRAPHQL_VALIDATION_FAILED', 'cost.max': 5000 }) })] } },
      { id: 'large', type: 'complete' },
    ]);
    expect(refusal[0].payload.errors[0].extensions['cost.estimated']).toBeGreaterThan(5000);
  });
});

describe('live updates under a flood: the router is not counted per address', () => {
  let subgraph: TestSubgraph;
  const sockets: WebSocket[] = [];

  beforeAll(async () => {
    subgraph = await startTestSubgraph({ tenants: demoTenants() }, { WFS_ROUTER_SECRET: ROUTER_SECRET, LOG_LEVEL: 'warn' }, { limits: { socket: { addressStrikes: 1, refusalDelayMs: 0 } } });
  });
  afterAll(async () => {
    for (const socket of sockets) socket.terminate();
    await subgraph.close();
  });

  it('never refuses an upgrade that carries the router secret, however its connections behaved; refuses one without it before the handshake', async () => {
    const router = { 'router-authorization': ROUTER_SECRET };
    for (let i = 0; i < 3; i++) await misbehave(subgraph.server.url, '127.0.0.7', router);
    const still = await open(subgraph.server.url, '127.0.0.7', router);
    expect(still.raw).toBeDefined();
    sockets.push(still.raw!.socket);

    // Without the secret: 401 before any handshake, as a POST without it (no connection to strike).
    expect((await open(subgraph.server.url, '127.0.0.8')).status).toBe(401);
    expect((await open(subgraph.server.url, '127.0.0.8', { 'router-authorization': 'not-the-router-secret' })).status).toBe(401);
  });
});
