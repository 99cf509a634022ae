import { connect, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { Client } from 'undici';
import WebSocket from 'ws';
import { demoTenants } from '../../tools/emulator';
import { startBuiltServer, SHIPPED_NODE_FLAGS, type BuiltServer } from '../helpers/builtServer';
import { heldMemory, INSPECT_FLAG } from '../helpers/inspectedHeap';
import { wsUrl } from '../helpers/liveClient';
import { parseSamples, scrapeText, total } from '../helpers/metrics';
import { waitFor } from '../helpers/waitFor';

/**
 * The memory account (docs/limits.md, "The memory account"): every bound a client can
 * fill, filled at once, against the built server as it ships (`node
 * --max-semi-space-size=8 --max-old-space-size=256 dist/index.js`, every bound at its
 * default), and the replica is still up and answering. What is filled: the replica's
 * WebSocket connections (250), each with a message half received and four open
 * subscriptions keeping 2.9 KiB of variables each (1 000 subscriptions, the replica's
 * bound, and each company's variables' bound); the request bodies' bound (eight bodies of nearly 1 MiB,
 * 2 MiB each as parsed); and every other socket the replica takes with 15 KiB of
 * headers arriving. One connection opened before them all (a router's kept-alive
 * connection) is then answered. Loopback addresses stand for the many clients the
 * per-address bounds ask for.
 */
const MiB = 2 ** 20;
let server: BuiltServer | undefined;
const sockets: Socket[] = [];
const clients: WebSocket[] = [];

afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  for (const client of clients) client.terminate();
  await server?.stop();
});

const FILTERED = 'subscription Filtered($filter: ShiftFilter) { shiftChanges(filter: $filter) { kind nodeId } }';

/** A raw socket from `localAddress` that has sent `head`, then stalls. */
function stalled(url: string, localAddress: string, head: string | Buffer): Socket {
  const { hostname, port } = new URL(url);
  const socket = connect({ host: hostname, port: Number(port), localAddress });
  socket.on('error', () => undefined);
  socket.write(head);
  sockets.push(socket);
  return socket;
}

/** A WebSocket of `tenantId`'s from `localAddress`, its connection_init acknowledged, with `count` subscriptions open, each keeping about 2.9 KiB of variables (334 of a company's keep just under its 1 MiB). */
async function liveConnection(url: string, tenantId: string, localAddress: string, count: number): Promise<WebSocket> {
  const socket = new WebSocket(wsUrl(url), 'graphql-transport-ws', { headers: { 'x-tenant-id': tenantId }, localAddress });
  clients.push(socket);
  socket.on('error', () => undefined);
  const acked = new Promise<void>((resolve, reject) => {
    socket.on('message', (data) => (JSON.parse(String(data)).type === 'connection_ack' ? resolve() : undefined));
    socket.once('close', (code) => reject(new Error(`closed with ${code}`)));
  });
  await new Promise<void>((resolve, reject) => socket.once('open', () => resolve()).once('error', reject));
  socket.send(JSON.stringify({ type: 'connection_init', payload: {} }));
  await acked;
  for (let i = 0; i < count; i++) {
    const filter = { locationId: `${randomBytes(8).toString('hex')}${'l'.repeat(2_880)}` };
    socket.send(JSON.stringify({ id: String(i), type: 'subscribe', payload: { query: FILTERED, variables: { filter } } }));
  }
  return socket;
}

/** The start of a masked text frame that says `length` bytes and carries `sent` of them: ws holds it half received. */
function halfFrame(length: number, sent: number): Buffer {
  const head = Buffer.from([0x81, 0x80 | 126, length >> 8, length & 0xff, 1, 2, 3, 4]);
  return Buffer.concat([head, Buffer.alloc(sent, 0x61)]);
}

const metric = async (url: string, name: string, where: Record<string, string> = {}) => total(parseSamples(await scrapeText(url)), name, where);

it('stays up and answers with every bound a client can fill filled at once', async () => {
  server = await startBuiltServer({ LOG_LEVEL: 'warn', WFS_REQUEST_BODY_TIMEOUT_MS: '60000' }, [...SHIPPED_NODE_FLAGS, INSPECT_FLAG]);
  const url = server.url;
  const before = await heldMemory(server);
  // The demo companies granted shifts.read (a subscription to shifts of another is refused).
  const companies = demoTenants()
    .filter((tenant) => tenant.grantedScopes.includes('shifts.read'))
    .map((tenant) => tenant.tenantId);
  expect(companies).toHaveLength(3);
  // A router's connection, opened first and kept alive: it is answered at the end.
  const router = new Client(new URL(url).origin, { keepAliveTimeout: 60_000, localAddress: '127.0.0.50' });
  const asked = async () => {
    const response = await router.request({ path: '/graphql', method: 'POST', headers: { 'content-type': 'application/json', 'x-tenant-id': companies[0]! }, body: JSON.stringify({ query: '{ locations(first: 1) { nodes { id } } }' }) });
    return { status: response.statusCode, body: (await response.body.json()) as { data?: { locations?: { nodes: unknown[] } } } };
  };
  try {
    expect((await asked()).status).toBe(200);

    // 250 WebSocket connections (100 an address), four subscriptions each: 1 000, 334 a company.
    const live: WebSocket[] = [];
    for (let i = 0; i < 250; i++) live.push(await liveConnection(url, companies[i % companies.length]!, `127.0.1.${1 + Math.floor(i / 100)}`, 4));
    await waitFor(async () => (await metric(url, 'wfs_live_subscriptions')) === 1_000, 'the 1 000 subscriptions open', 60_000);
    expect(await metric(url, 'wfs_live_subscriptions_refused_total')).toBe(0);
    // Each then sends most of a message of 64 000 bytes, and stops.
    for (const socket of live) (socket as unknown as { _socket: Socket })._socket.write(halfFrame(64_000, 63_000));

    // Eight bodies of 1 MiB but 300 bytes, two an address: each counts twice its bytes and
    // 64 as parsed, and the eight together all but the last 5 KiB of the bodies' 16 MiB.
    const declared = 1024 * 1024;
    const sent = declared - 300;
    const charge = 2 * sent + 64;
    for (let i = 0; i < 8; i++) {
      stalled(url, `127.0.2.${1 + Math.floor(i / 2)}`, `POST /graphql HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${declared}\r\n\r\n${' '.repeat(sent)}`);
    }
    await waitFor(async () => (await metric(url, 'wfs_graphql_request_body_bytes')) === 8 * charge, 'the eight bodies held', 60_000);
    expect(16 * MiB - 8 * charge).toBeLessThan(8_192);

    // Every other socket the replica takes, each with 15 KiB of headers arriving.
    const taken = 1 + 250 + 8;
    for (let i = 0; i < 1_500 - taken; i++) stalled(url, `127.0.3.${1 + Math.floor(i / 500)}`, `GET /health HTTP/1.1\r\nhost: x\r\nx-pad: ${'h'.repeat(15 * 1024)}`);
    // No further connection is taken now: the metrics come over the router's.
    const viaRouter = async (name: string) => {
      const response = await router.request({ path: '/metrics', method: 'GET' });
      return total(parseSamples(await response.body.text()), name);
    };
    await waitFor(async () => (await viaRouter('nodejs_active_handles_total')) >= 1_500, 'every socket open', 30_000);

    const held = await heldMemory(server);
    expect(server.alive()).toBe(true);
    // The account's worst case is 105 MiB over what the process held before.
    expect(held.heapUsed + held.external).toBeLessThan(before.heapUsed + before.external + 105 * MiB);
    const answer = await asked();
    expect(answer.status).toBe(200);
    expect(answer.body.data?.locations?.nodes).toHaveLength(1);
    expect(await viaRouter('wfs_live_subscriptions')).toBe(1_000);
    expect(await viaRouter('wfs_graphql_request_body_bytes')).toBe(8 * charge);
  } finally {
    await router.close();
  }
}, 180_000);
