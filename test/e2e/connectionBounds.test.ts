import { execFileSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { Agent, request } from 'undici';
import WebSocket from 'ws';
import { startBuiltServer, type BuiltServer } from '../helpers/builtServer';
import { wsUrl } from '../helpers/liveClient';
import { parseSamples, scrapeText, total } from '../helpers/metrics';
import { waitFor } from '../helpers/waitFor';

/**
 * The bounds a client meets before its request is read (docs/limits.md, "Connections";
 * docs/live.md, "Limits"), against the built server as it ships: `node
 * --max-semi-space-size=8 --max-old-space-size=256 dist/index.js`, the bounds lowered
 * by their settings. An IPv6 client is counted by its /64 on the WebSocket side as on
 * the HTTP side; with a router secret an upgrade without it is refused before the
 * handshake; sockets that never finish their headers are closed at the header deadline
 * and refused past their address's share, while /health and the router are served.
 * Other clients bind their sockets to other loopback addresses (all of 127.0.0.0/8 is
 * this host's; the /64 is added to `lo` for the test and removed after it).
 */
const ROUTER_SECRET = 'router-secret-for-the-connection-bounds-0123456789';
const running: BuiltServer[] = [];
const sockets: Array<Socket | WebSocket> = [];

/** Closes a client's socket at once, without a closing handshake. */
function drop(socket: Socket | WebSocket): void {
  if (socket instanceof WebSocket) socket.terminate();
  else socket.destroy();
}

async function start(env: Record<string, string>): Promise<BuiltServer> {
  const server = await startBuiltServer({ LOG_LEVEL: 'warn', ...env });
  running.push(server);
  return server;
}

afterEach(async () => {
  for (const socket of sockets.splice(0)) drop(socket);
  for (const server of running.splice(0)) await server.stop();
});

const metric = async (url: string, name: string, where: Record<string, string> = {}) => total(parseSamples(await scrapeText(url)), name, where);

/**
 * A WebSocket upgrade: 'acked' once its `connection_init` is acknowledged, the HTTP
 * status it was refused with, or, switched (101) but closed before its
 * acknowledgement, the close code.
 */
function upgrade(url: string, options: { localAddress?: string; headers?: Record<string, string> } = {}): Promise<{ status: number | 'acked' | `101, then closed with ${number}`; body: string }> {
  return new Promise((resolve) => {
    const socket = new WebSocket(wsUrl(url), 'graphql-transport-ws', options);
    sockets.push(socket);
    socket.on('error', () => undefined);
    socket.once('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: {} })));
    socket.on('message', (data) => (JSON.parse(String(data)).type === 'connection_ack' ? resolve({ status: 'acked', body: '' }) : undefined));
    socket.once('close', (code) => resolve({ status: `101, then closed with ${code}`, body: '' }));
    socket.once('unexpected-response', (_request, response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += String(chunk)));
      response.once('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
  });
}

describe('WebSocket connections per client address', () => {
  // A /64 of the unique-local range of its own per run, on the loopback device.
  const prefix = `fd00:0:5eed:${randomInt(0x1000, 0xffff).toString(16)}`;
  const other = `fd00:0:5eee:${randomInt(0x1000, 0xffff).toString(16)}::1`;
  const addresses = Array.from({ length: 8 }, (_, index) => `${prefix}::${index + 1}`);
  const added: string[] = [];

  beforeAll(() => {
    // Not skipped when it cannot: a failure to add an address fails the suite.
    for (const address of [...addresses, other]) {
      execFileSync('ip', ['-6', 'addr', 'add', `${address}/64`, 'dev', 'lo', 'nodad'], { stdio: 'pipe' });
      added.push(address);
    }
  });
  afterAll(() => {
    for (const address of added.splice(0)) execFileSync('ip', ['-6', 'addr', 'del', `${address}/64`, 'dev', 'lo'], { stdio: 'pipe' });
  });

  it('counts the eight addresses of one /64 as one client: together they get no more than its share', async () => {
    const SHARE = 6;
    const server = await start({ HOST: '::1', WFS_LIVE_CONNECTIONS_PER_ADDRESS: String(SHARE) });
    // Four connections from each of the eight addresses at once: 32 asked, 6 served
    // (the refusals are answered after their pause, together).
    const outcomes: unknown[] = (await Promise.all(addresses.flatMap((localAddress) => Array.from({ length: 4 }, () => upgrade(server.url, { localAddress }))))).map(({ status }) => status);
    expect(outcomes.filter((status) => status === 'acked')).toHaveLength(SHARE);
    expect(outcomes.filter((status) => status === 429)).toHaveLength(32 - SHARE);
    expect(await metric(server.url, 'wfs_live_subscriptions_refused_total', { reason: 'address_connections' })).toBe(32 - SHARE);
    // Another /64 is another client: served.
    expect((await upgrade(server.url, { localAddress: other })).status).toBe('acked');
  }, 30_000);
});

describe('the router secret on the WebSocket upgrade', () => {
  it('refuses an upgrade without it with 401 before the handshake, as a POST without it, and serves one with it', async () => {
    const server = await start({ WFS_ROUTER_SECRET: ROUTER_SECRET });
    const post = await request(server.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ __typename }' }) });
    const posted = { status: post.statusCode, body: await post.body.json() };
    expect(posted.status).toBe(401);

    for (const headers of [{}, { 'router-authorization': 'not-the-router-secret-0123456789' }] as Array<Record<string, string>>) {
      const refused = await upgrade(server.url, { headers });
      expect(refused.status).toBe(401);
      expect({ status: refused.status, body: JSON.parse(refused.body) }).toEqual(posted);
    }
    expect(await metric(server.url, 'wfs_live_subscriptions_refused_total', { reason: 'router_secret' })).toBe(2);
    expect(await metric(server.url, 'wfs_live_connections')).toBe(0);
    expect((await upgrade(server.url, { headers: { 'router-authorization': ROUTER_SECRET } })).status).toBe('acked');
  }, 30_000);
});

describe('HTTP connections per address and their headers deadline', () => {
  const attacker = '127.0.0.5';
  const routerAddress = '127.0.0.6';
  const refusedFor = (url: string, reason: string) => metric(url, 'wfs_http_connections_refused_total', { reason });

  /**
   * A raw connection from `localAddress` that sends `text` (by default part of a
   * request's headers) and then holds. `connected` settles once the client side is
   * connected: the server accepts in order, so a request made after it is accepted
   * after it.
   */
  function raw(url: string, localAddress: string, text = `POST /graphql HTTP/1.1\r\nhost: localhost\r\ncontent-type: appli`) {
    const { hostname, port } = new URL(url);
    const socket = connect({ host: hostname, port: Number(port), localAddress });
    sockets.push(socket);
    const state = { answer: '', closed: false, connected: new Promise<void>((resolve) => socket.once('connect', () => resolve())) };
    socket.on('data', (chunk) => (state.answer += String(chunk)));
    socket.on('close', () => (state.closed = true));
    socket.on('error', () => undefined);
    socket.write(text);
    return state;
  }

  it('refuses sockets past an address share, closes unfinished headers at the deadline, and still serves /health and the router', async () => {
    const SHARE = 20;
    const HEADERS_MS = 1_500;
    const server = await start({ WFS_ROUTER_SECRET: ROUTER_SECRET, WFS_MAX_CONNECTIONS_PER_ADDRESS: String(SHARE), WFS_HEADERS_TIMEOUT_MS: String(HEADERS_MS) });
    const started = Date.now();
    // Five past the share: closed at once, nothing answered, counted.
    const attempted = Array.from({ length: SHARE + 5 }, () => raw(server.url, attacker));
    await waitFor(async () => (await refusedFor(server.url, 'address')) === 5 && attempted.filter((socket) => socket.closed).length === 5, 'the five past the share refused');
    const held = attempted.filter((socket) => !socket.closed);
    expect(attempted.filter((socket) => socket.closed).map((socket) => socket.answer)).toEqual(Array(5).fill(''));

    // While the share is held: /health answers another address, and the router's
    // connections (known by their secret) take no share of its own address: one after
    // another, each kept open, more than a share of them.
    const probe = new Agent({ localAddress: '127.0.0.7' });
    const health = await request(new URL('/health', server.url), { dispatcher: probe });
    expect(health.statusCode).toBe(200);
    await health.body.dump();
    await probe.close();
    const query = JSON.stringify({ query: '{ __typename }' });
    const routed = `POST /graphql HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\nrouter-authorization: ${ROUTER_SECRET}\r\ncontent-length: ${query.length}\r\n\r\n${query}`;
    for (let index = 0; index < SHARE + 10; index += 1) {
      const connection = raw(server.url, routerAddress, routed);
      await waitFor(() => connection.answer.includes('{"data":') || connection.closed, 'a query of the router answered');
      expect(connection.answer).toMatch(/^HTTP\/1\.1 200 /);
    }
    const more = raw(server.url, routerAddress);
    await more.connected;
    expect(await refusedFor(server.url, 'address')).toBe(5);

    // The unfinished headers are answered 408 and closed at the deadline, not before.
    await waitFor(() => held.every((socket) => socket.closed), 'the unfinished headers closed at their deadline', 10_000);
    expect(Date.now() - started).toBeGreaterThanOrEqual(HEADERS_MS);
    expect(held.map((socket) => socket.answer.slice(0, 13))).toEqual(Array(SHARE).fill('HTTP/1.1 408 '));
    expect(await refusedFor(server.url, 'headers_timeout')).toBeGreaterThanOrEqual(SHARE);
    // The address's share is free again.
    const again = raw(server.url, attacker);
    await again.connected;
    expect(await refusedFor(server.url, 'address')).toBe(5);
    expect(server.alive()).toBe(true);
  }, 30_000);

  it('refuses connections past the replica bound before reading them, and counts them', async () => {
    const server = await start({ WFS_MAX_CONNECTIONS: '10' });
    // Ten held from ten addresses (no address share reached) fill the replica; the eleventh is closed unanswered.
    const held = Array.from({ length: 10 }, (_, index) => raw(server.url, `127.0.1.${index + 1}`));
    await Promise.all(held.map((socket) => socket.connected));
    const over = raw(server.url, '127.0.2.1');
    await waitFor(() => over.closed, 'the eleventh closed');
    expect(over.answer).toBe('');
    expect(held.some((socket) => socket.closed)).toBe(false);
    for (const socket of sockets.splice(0)) drop(socket);
    // At least 1: a scrape that arrives before the server has seen the held sockets go
    // is itself refused (and counted), which a busy machine makes likely.
    await waitFor(async () => (await refusedFor(server.url, 'replica').catch(() => -1)) >= 1, 'the refusal counted, scraped once there is room');
  }, 30_000);
});
