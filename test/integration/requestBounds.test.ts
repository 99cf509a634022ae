import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { Agent, request } from 'undici';
import { endWithin } from '../../src/http/requestBounds';
import { createRouterGate } from '../../src/graphql/admission/routerGate';
import { clientAddress } from '../../src/graphql/admission/clientAddress';
import { boundConnections, boundedServerOptions } from '../../src/http/connectionBounds';
import { as } from '../helpers/fixtures';
import { scrapeTotal } from '../helpers/metrics';
import { startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';
import { waitFor } from '../helpers/waitFor';

/**
 * What one replica holds for the requests in flight is bounded (src/http/requestBounds.ts):
 * how many it serves at once, the body bytes they keep until their answers are out, each
 * client address's share of both, how long a body may take to arrive, and how long a
 * written answer may wait for a client that stopped reading. The connection bounds
 * (src/http/requestBounds.ts) answer client errors as node:http would; their bounds
 * against the built server: test/e2e/connectionBounds.test.ts.
 */

type Answer = { status: number; retryAfter: string | undefined; cacheControl: string | undefined; body: { errors?: Array<{ extensions?: { code?: string } }>; data?: unknown } };

/** A router secret: its requests are exempt from the address share, so the replica's own bounds are what these meet. */
const ROUTER_SECRET = 'request-bounds-router-secret-0123456789';
const ROUTER = { 'router-authorization': ROUTER_SECRET };

/** Loopback clients from distinct addresses (all of 127.0.0.0/8 is this host's). */
const from: Record<string, Agent> = {};
const agentFor = (localAddress: string) => (from[localAddress] ??= new Agent({ localAddress }));
afterAll(async () => {
  await Promise.all(Object.values(from).map((agent) => agent.close()));
});

async function post(subgraph: TestSubgraph, payload: unknown, headers: Record<string, string>, localAddress = '127.0.0.1'): Promise<Answer> {
  const response = await request(subgraph.server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(payload),
    dispatcher: agentFor(localAddress),
  });
  const retryAfter = response.headers['retry-after'];
  const cacheControl = response.headers['cache-control'];
  return { status: response.statusCode, retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined, cacheControl: typeof cacheControl === 'string' ? cacheControl : undefined, body: (await response.body.json()) as Answer['body'] };
}

describe('requests in flight', () => {
  let subgraph: TestSubgraph;
  afterEach(async () => {
    await subgraph?.close();
  });

  it('past the cap, a request is refused at once with 503 SERVICE_UNAVAILABLE and Retry-After; served again once others end', async () => {
    subgraph = await startTestSubgraph({ latencyMs: 400 }, { WFS_ROUTER_SECRET: ROUTER_SECRET }, { limits: { request: { inFlight: 3 } } });
    const tenants = subgraph.emulator.tenants;
    const query = (i: number) => ({ query: `{ locations(first: ${i + 1}) { nodes { id } } }` });
    const as_ = (i: number) => ({ ...as(tenants[i % tenants.length]!), ...ROUTER });
    let slowDone = 0;
    const slow = [0, 1, 2].map((i) => post(subgraph, query(i), as_(i)).finally(() => (slowDone += 1)));
    // All three are being served: each has called the upstream, whose answer takes 400 ms.
    await waitFor(() => subgraph.emulator.counters.listRequests.locations >= 3, 'the three slow requests under way');
    const refused = await post(subgraph, query(3), as_(0));
    // At once: answered while the three it was refused for are still being served.
    expect(slowDone).toBe(0);
    expect(refused.status).toBe(503);
    expect(refused.retryAfter).toBe('1');
    // Answered before GraphQL runs, yet no gateway or proxy may keep it, as no refusal Apollo answers is kept.
    expect(refused.cacheControl).toBe('no-store');
    expect(refused.body.errors?.[0]?.extensions?.code).toBe('SERVICE_UNAVAILABLE');
    for (const answer of await Promise.all(slow)) expect(answer.status).toBe(200);
    expect((await post(subgraph, query(3), as_(0))).status).toBe(200);
  });

  it('a body counts against the body bound until its answer is out, not only while it is read', async () => {
    // A body holds what it is counted as parsed (memory/jsonSize.ts): twice its bytes, and
    // 64 bytes a JSON value. Two of about 1.8 MB each do not fit 3 MB; one does.
    subgraph = await startTestSubgraph({ latencyMs: 400 }, { WFS_ROUTER_SECRET: ROUTER_SECRET }, { limits: { request: { bufferedBodyBytes: 3_000_000 } } });
    const tenant = { ...as(subgraph.emulator.tenants[0]!), ...ROUTER };
    // An unused variable pads each body to about 900 KB.
    const padded = (first: number) => ({ query: `{ locations(first: ${first}) { nodes { id } } }`, variables: { pad: 'x'.repeat(900_000) } });
    const first = post(subgraph, padded(1), tenant);
    // The first body is read whole and its request served: it called the upstream, whose answer takes 400 ms.
    await waitFor(() => subgraph.emulator.counters.listRequests.locations >= 1, 'the first request under way');
    const second = await post(subgraph, padded(2), tenant);
    expect(second.status).toBe(503);
    expect(second.retryAfter).toBe('1');
    expect(second.body.errors?.[0]?.extensions?.code).toBe('SERVICE_UNAVAILABLE');
    expect((await first).status).toBe(200);
    // The first answer is out: its bytes are free again.
    expect((await post(subgraph, padded(3), tenant)).status).toBe(200);
  });
});

/** Opens a raw connection from `localAddress` that sends a POST's headers and `sent` of its `declared` body bytes, then stalls. */
function stalledBody(url: string, localAddress: string, declared: number, sent: number, headers: Record<string, string> = {}): { socket: Socket; answer: () => string; closed: () => boolean } {
  const { hostname, port, pathname } = new URL(url);
  const socket = connect({ host: hostname, port: Number(port), localAddress });
  let answer = '';
  let closed = false;
  socket.on('data', (chunk) => (answer += String(chunk)));
  socket.on('close', () => (closed = true));
  socket.on('error', () => undefined);
  const head = Object.entries({ 'content-type': 'application/json', 'content-length': String(declared), ...headers })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.write(`POST ${pathname} HTTP/1.1\r\nhost: ${hostname}\r\n${head}\r\n`);
  socket.write(Buffer.alloc(sent, 0x20));
  return { socket, answer: () => answer, closed: () => closed };
}

// Stalled bodies are held for the test's length: a deadline of a minute never drops them mid-test.
describe("one client address's share of the bounds", () => {
  let subgraph: TestSubgraph;
  const sockets: Socket[] = [];
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.destroy();
    await subgraph?.close();
  });
  const refusedFor = (reason: string) => scrapeTotal(subgraph.server.url, 'wfs_graphql_requests_refused_total', { reason });

  it('refuses an address past a quarter of the requests in flight with 429, while another address is served', async () => {
    subgraph = await startTestSubgraph({}, {}, { limits: { request: { inFlight: 8, bodyTimeoutMs: 60_000 } } });
    const tenant = as(subgraph.emulator.tenants[0]!);
    // Two slow bodies from 127.0.0.1 hold its share (a quarter of 8).
    const held = [0, 1].map(() => stalledBody(subgraph.server.url, '127.0.0.1', 10, 9, tenant));
    sockets.push(...held.map((one) => one.socket));
    await waitFor(async () => (await scrapeTotal(subgraph.server.url, 'wfs_graphql_requests_in_flight')) === 2, 'the two slow bodies in flight');
    const refused = await post(subgraph, { query: '{ __typename }' }, tenant, '127.0.0.1');
    expect(refused.status).toBe(429);
    expect(refused.retryAfter).toBe('1');
    expect(refused.body.errors?.[0]?.extensions?.code).toBe('SERVICE_UNAVAILABLE');
    expect(await refusedFor('address_in_flight')).toBe(1);
    // Another address is served.
    const other = await post(subgraph, { query: '{ locations(first: 1) { nodes { id } } }' }, tenant, '127.0.0.2');
    expect(other.status).toBe(200);
    expect(held.every((one) => one.answer() === '')).toBe(true);
  });

  it('exempts requests carrying the router secret from the share: only the replica bound applies to them', async () => {
    subgraph = await startTestSubgraph({}, { WFS_ROUTER_SECRET: ROUTER_SECRET }, { limits: { request: { inFlight: 8, bodyTimeoutMs: 60_000 } } });
    const tenant = { ...as(subgraph.emulator.tenants[0]!), ...ROUTER };
    const held = Array.from({ length: 7 }, () => stalledBody(subgraph.server.url, '127.0.0.1', 10, 9, tenant));
    sockets.push(...held.map((one) => one.socket));
    await waitFor(async () => (await scrapeTotal(subgraph.server.url, 'wfs_graphql_requests_in_flight')) === 7, 'seven slow bodies in flight from one address');
    expect((await post(subgraph, { query: '{ locations(first: 1) { nodes { id } } }' }, tenant, '127.0.0.1')).status).toBe(200);
    expect(await refusedFor('address_in_flight')).toBe(0);
  });

  it('refuses an address past a quarter of the body bytes with 429 once its body is drained, while another address is served', async () => {
    subgraph = await startTestSubgraph({}, {}, { limits: { request: { bufferedBodyBytes: 801_000, bodyTimeoutMs: 60_000 } } });
    const tenant = as(subgraph.emulator.tenants[0]!);
    // 99 999 of 100 000 bytes, counted as parsed: twice its bytes and one JSON value of 64
    // (memory/jsonSize.ts), 200 062, and a quarter of 801 000 holds exactly one.
    const first = stalledBody(subgraph.server.url, '127.0.0.1', 100_000, 99_999, tenant);
    sockets.push(first.socket);
    await waitFor(async () => (await scrapeTotal(subgraph.server.url, 'wfs_graphql_request_body_bytes')) === 200_062, "the first body's bytes held");
    const refused = await post(subgraph, { query: '{ __typename }', variables: { pad: 'x'.repeat(20_000) } }, tenant, '127.0.0.1');
    expect(refused.status).toBe(429);
    expect(refused.body.errors?.[0]?.extensions?.code).toBe('SERVICE_UNAVAILABLE');
    expect(await refusedFor('address_body_bytes')).toBe(1);
    expect((await post(subgraph, { query: '{ __typename }', variables: { pad: 'x'.repeat(20_000) } }, tenant, '127.0.0.2')).status).toBe(200);
  });

  it('drops a body that has not arrived within the deadline with 408, freeing its slot and bytes at once', async () => {
    subgraph = await startTestSubgraph({}, {}, { limits: { request: { inFlight: 4, bodyTimeoutMs: 100 } } });
    const tenant = as(subgraph.emulator.tenants[0]!);
    const stalled = stalledBody(subgraph.server.url, '127.0.0.1', 10, 9, tenant);
    sockets.push(stalled.socket);
    await waitFor(() => stalled.closed(), 'the stalled body dropped');
    expect(stalled.answer()).toMatch(/^HTTP\/1\.1 408 /);
    expect(JSON.parse(stalled.answer().slice(stalled.answer().indexOf('\r\n\r\n') + 4))).toEqual({ errors: [{ message: expect.stringContaining('100 ms'), extensions: { code: 'BAD_REQUEST' } }] });
    expect(await refusedFor('body_timeout')).toBe(1);
    expect(await scrapeTotal(subgraph.server.url, 'wfs_graphql_request_body_bytes')).toBe(0);
    // The address's one slot (a quarter of 4) is free again.
    expect((await post(subgraph, { query: '{ locations(first: 1) { nodes { id } } }' }, tenant, '127.0.0.1')).status).toBe(200);
  });
});

describe('clientAddress', () => {
  it('counts IPv4 addresses as they are, IPv4-mapped ones as IPv4, IPv6 ones by their /64', () => {
    expect(clientAddress('203.0.113.7')).toBe('203.0.113.7');
    expect(clientAddress('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(clientAddress('2001:db8:1:2:aaaa::1')).toBe(clientAddress('2001:db8:1:2:ffff:ffff:ffff:ffff'));
    expect(clientAddress('2001:db8:1:2::1')).not.toBe(clientAddress('2001:db8:1:3::1'));
    expect(clientAddress(undefined)).toBe('');
  });
});

describe('endWithin', () => {
  let server: Server;
  afterEach(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('destroys the connection of a client that stops reading an answer, letting its buffered bytes go', async () => {
    let closedUnfinished!: (unfinished: boolean) => void;
    const closed = new Promise<boolean>((resolve) => (closedUnfinished = resolve));
    server = createServer((_req, res) => {
      res.once('close', () => closedUnfinished(!res.writableFinished));
      res.writeHead(200, { 'content-type': 'text/plain' });
      // Far more than the loopback socket buffers hold: it cannot leave while the client does not read.
      res.end(Buffer.alloc(64 * 1024 * 1024, 120));
      endWithin(res, 300);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
    socket.pause();
    socket.write('GET / HTTP/1.1\r\nhost: localhost\r\n\r\n');
    const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    expect(await closed).toBe(true);
    socket.resume();
    await ended;
  });

  it('leaves an answer that left in time alone', async () => {
    server = createServer((_req, res) => {
      res.end('ok');
      endWithin(res, 50);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const response = await request(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    expect(await response.body.text()).toBe('ok');
  });
});

describe('boundConnections', () => {
  let server: Server;
  afterEach(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  /** What a raw connection that sends `text` is answered, once it is closed. */
  const answer = (text: string) =>
    new Promise<string>((resolve) => {
      const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
      let data = '';
      socket.on('data', (chunk) => (data += String(chunk)));
      socket.on('error', () => undefined);
      socket.once('close', () => resolve(data.split('\r\n')[0]!));
      socket.write(text);
    });

  it('answers client errors as node:http does without a listener, and counts only the timeouts', async () => {
    const refused: string[] = [];
    server = createServer(boundedServerOptions(), (_req, res) => res.end('ok'));
    boundConnections(server, { maxConnections: 100, connectionsPerAddress: 100, headersTimeoutMs: 200, router: createRouterGate(null), refused: (reason) => refused.push(reason) });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    expect(await answer('GARBAGE\r\n\r\n')).toBe('HTTP/1.1 400 Bad Request');
    expect(await answer(`GET / HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`)).toBe('HTTP/1.1 431 Request Header Fields Too Large');
    expect(refused).toEqual([]);
    expect(await answer('GET / HTTP/1.1\r\nhost: x\r\n')).toBe('HTTP/1.1 408 Request Timeout');
    expect(refused).toEqual(['headers_timeout']);
    expect(await answer('GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n')).toBe('HTTP/1.1 200 OK');
  });
});
