import { connect, type Socket } from 'node:net';
import { Agent, request } from 'undici';
import { startBuiltServer, type BuiltServer } from '../helpers/builtServer';
import { scrapeTotal } from '../helpers/metrics';
import { waitFor } from '../helpers/waitFor';

/**
 * Slow request bodies from one address no longer lock everyone out (docs/limits.md,
 * "Time and size bounds"): the built server as the image runs it, `node
 * --max-semi-space-size=8 --max-old-space-size=256 dist/index.js`, in demo mode (no
 * identity needed, as for an attacker who reaches the port). The attacker is 127.0.0.1;
 * the other client binds its socket to 127.0.0.2 (all of 127.0.0.0/8 is this host's).
 */
const running: BuiltServer[] = [];
const sockets: Socket[] = [];
const other = new Agent({ localAddress: '127.0.0.2' });

async function start(env: Record<string, string>): Promise<BuiltServer> {
  const server = await startBuiltServer({ LOG_LEVEL: 'warn', ...env });
  running.push(server);
  return server;
}

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  for (const server of running.splice(0)) await server.stop();
});
afterAll(async () => {
  await other.close();
});

interface Stalled {
  answer: () => string;
  closed: () => boolean;
}

/** A raw connection from 127.0.0.1 that sends a POST's headers and `sent` of its `declared` body bytes, then stalls. */
function stalledBody(url: string, declared: number, sent: number): Stalled {
  const { hostname, port, pathname } = new URL(url);
  const socket = connect({ host: hostname, port: Number(port), localAddress: '127.0.0.1' });
  sockets.push(socket);
  let answer = '';
  let closed = false;
  socket.on('data', (chunk) => (answer += String(chunk)));
  socket.on('close', () => (closed = true));
  socket.on('error', () => undefined);
  socket.write(`POST ${pathname} HTTP/1.1\r\nhost: ${hostname}\r\ncontent-type: application/json\r\ncontent-length: ${declared}\r\n\r\n`);
  socket.write(Buffer.alloc(sent, 0x20));
  return { answer: () => answer, closed: () => closed };
}

/** The status and `extensions.code` of a raw HTTP answer. */
function parsed(answer: string): { status: number; code: unknown } {
  const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as { errors?: Array<{ extensions?: { code?: unknown } }> };
  return { status: Number(/^HTTP\/1\.1 (\d{3}) /.exec(answer)?.[1]), code: body.errors?.[0]?.extensions?.code };
}

/** An ordinary query from 127.0.0.2, the client that must still be served. */
const OTHER_QUERY = JSON.stringify({ operationName: 'OtherClient', query: 'query OtherClient { locations(first: 1) { nodes { id name } } }' });
async function fromOtherAddress(url: string): Promise<{ status: number; body: { data?: { locations?: { nodes: unknown[] } } } }> {
  const response = await request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: OTHER_QUERY, dispatcher: other });
  return { status: response.statusCode, body: (await response.body.json()) as { data?: { locations?: { nodes: unknown[] } } } };
}

const refused = (url: string, reason: string) => scrapeTotal(url, 'wfs_graphql_requests_refused_total', { reason });

it('serves another address while 200 sockets from one each send 9 of 10 body bytes: that address holds a quarter of the in-flight bound', async () => {
  // The in-flight bound lowered to 200 so a few hundred sockets fill it (2 000 by default);
  // a deadline of a minute, so no stalled body is dropped while the test looks.
  const server = await start({ WFS_MAX_REQUESTS_IN_FLIGHT: '200', WFS_REQUEST_BODY_TIMEOUT_MS: '60000' });
  const stalled = Array.from({ length: 200 }, () => stalledBody(server.url, 10, 9));
  await waitFor(() => stalled.filter((one) => one.answer().includes('\r\n\r\n{')).length >= 150, '150 answers to the sockets past the share');
  await waitFor(async () => (await scrapeTotal(server.url, 'wfs_graphql_requests_in_flight')) === 50, 'the share held');
  const answered = stalled.filter((one) => one.answer() !== '');
  expect(answered).toHaveLength(150);
  for (const one of answered) expect(parsed(one.answer())).toEqual({ status: 429, code: 'SERVICE_UNAVAILABLE' });
  expect(await refused(server.url, 'address_in_flight')).toBe(150);

  const served = await fromOtherAddress(server.url);
  expect(served.status).toBe(200);
  expect(served.body.data?.locations?.nodes).toHaveLength(1);
  expect(await refused(server.url, 'in_flight')).toBe(0);
  expect(server.alive()).toBe(true);
}, 60_000);

it('serves another address while 70 sockets from one each hold a body of nearly 1 MiB: that address holds a quarter of the body-byte bound', async () => {
  // The shipped bounds: 16 MiB of bodies counted as parsed, a quarter of it an address.
  const server = await start({ WFS_REQUEST_BODY_TIMEOUT_MS: '60000' });
  const declared = 1024 * 1024;
  const each = declared - 200;
  // Spaces, no JSON value yet but the one every text counts: twice its bytes and 64 (memory/jsonSize.ts).
  const charge = 2 * each + 64;
  for (let i = 0; i < 70; i++) stalledBody(server.url, declared, each);
  // Each body ends up held whole but its last 200 bytes, or refused (and drained, its answer after its end).
  await waitFor(
    async () => {
      const held = await scrapeTotal(server.url, 'wfs_graphql_request_body_bytes');
      return held % charge === 0 && held / charge + (await refused(server.url, 'address_body_bytes')) === 70;
    },
    'every body held or refused',
    30_000,
  );
  const held = await scrapeTotal(server.url, 'wfs_graphql_request_body_bytes');
  // A quarter of 16 MiB holds two such bodies.
  expect(held).toBe(2 * charge);
  expect(held).toBeLessThanOrEqual(16 * 1024 * 1024 / 4);

  const served = await fromOtherAddress(server.url);
  expect(served.status).toBe(200);
  expect(served.body.data?.locations?.nodes).toHaveLength(1);
  expect(await refused(server.url, 'body_bytes')).toBe(0);
  expect(server.alive()).toBe(true);
}, 60_000);

it('drops a body that does not arrive within the deadline (100 ms here) with 408, and frees its slot at once', async () => {
  // In-flight bound 4: the address's share is one request, which the stalled body holds.
  const server = await start({ WFS_MAX_REQUESTS_IN_FLIGHT: '4', WFS_REQUEST_BODY_TIMEOUT_MS: '100' });
  const stalled = stalledBody(server.url, 10, 9);
  await waitFor(() => stalled.closed(), 'the stalled body dropped');
  expect(parsed(stalled.answer())).toEqual({ status: 408, code: 'BAD_REQUEST' });
  expect(await refused(server.url, 'body_timeout')).toBe(1);
  expect(await scrapeTotal(server.url, 'wfs_graphql_requests_in_flight')).toBe(0);
  expect(await scrapeTotal(server.url, 'wfs_graphql_request_body_bytes')).toBe(0);
  // The same address is served again: the one slot of its share was given back.
  const after = await request(server.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ __typename }' }) });
  expect(after.statusCode).toBe(200);
  expect(await after.body.json()).toMatchObject({ data: { __typename: 'Query' } });
}, 60_000);
