import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { request } from 'undici';
import { endWithin } from '../../src/http/graphqlHandler';
import { as } from '../helpers/fixtures';
import { startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';
import { waitFor } from '../helpers/waitFor';

/**
 * What one replica holds for the requests in flight is bounded (src/http/graphqlHandler.ts):
 * how many it serves at once, the body bytes they keep until their answers are out, and
 * how long a written answer may wait for a client that stopped reading.
 */

type Answer = { status: number; retryAfter: string | undefined; body: { errors?: Array<{ extensions?: { code?: string } }>; data?: unknown } };

async function post(subgraph: TestSubgraph, payload: unknown, headers: Record<string, string>): Promise<Answer> {
  const response = await request(subgraph.server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(payload),
  });
  const retryAfter = response.headers['retry-after'];
  return { status: response.statusCode, retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined, body: (await response.body.json()) as Answer['body'] };
}

describe('requests in flight', () => {
  let subgraph: TestSubgraph;
  afterEach(async () => {
    await subgraph?.close();
  });

  it('past the cap, a request is refused at once with 503 SERVICE_UNAVAILABLE and Retry-After; served again once others end', async () => {
    subgraph = await startTestSubgraph({ latencyMs: 400 }, {}, { maxRequestsInFlight: 3 });
    const tenants = subgraph.emulator.tenants;
    const query = (i: number) => ({ query: `{ locations(first: ${i + 1}) { nodes { id } } }` });
    let slowDone = 0;
    const slow = [0, 1, 2].map((i) => post(subgraph, query(i), as(tenants[i % tenants.length]!)).finally(() => (slowDone += 1)));
    // All three are being served: each has called the upstream, whose answer takes 400 ms.
    await waitFor(() => subgraph.emulator.counters.listRequests.locations >= 3, 'the three slow requests under way');
    const refused = await post(subgraph, query(3), as(tenants[0]!));
    // At once: answered while the three it was refused for are still being served.
    expect(slowDone).toBe(0);
    expect(refused.status).toBe(503);
    expect(refused.retryAfter).toBe('1');
    expect(refused.body.errors?.[0]?.extensions?.code).toBe('SERVICE_UNAVAILABLE');
    for (const answer of await Promise.all(slow)) expect(answer.status).toBe(200);
    expect((await post(subgraph, query(3), as(tenants[0]!))).status).toBe(200);
  });

  it('a body counts against the body bound until its answer is out, not only while it is read', async () => {
    subgraph = await startTestSubgraph({ latencyMs: 400 }, {}, { maxBufferedBodyBytes: 1_500_000 });
    const tenant = subgraph.emulator.tenants[0]!;
    // An unused variable pads each body to about 900 KB.
    const padded = (first: number) => ({ query: `{ locations(first: ${first}) { nodes { id } } }`, variables: { pad: 'x'.repeat(900_000) } });
    const first = post(subgraph, padded(1), as(tenant));
    // The first body is read whole and its request served: it called the upstream, whose answer takes 400 ms.
    await waitFor(() => subgraph.emulator.counters.listRequests.locations >= 1, 'the first request under way');
    const second = await post(subgraph, padded(2), as(tenant));
    expect(second.status).toBe(503);
    expect(second.retryAfter).toBe('1');
    expect(second.body.errors?.[0]?.extensions?.code).toBe('SERVICE_UNAVAILABLE');
    expect((await first).status).toBe(200);
    // The first answer is out: its bytes are free again.
    expect((await post(subgraph, padded(3), as(tenant))).status).toBe(200);
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
