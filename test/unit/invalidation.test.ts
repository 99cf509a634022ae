import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InvalidationSender, type InvalidationOutcome } from '../../src/cache/invalidation';

/**
 * The invalidation client (docs/caching.md, "Invalidation") against a real local HTTP
 * server standing in for a gateway's invalidation endpoint: body and key, retries with
 * backoff, a refused key not retried, the deadline, the queue bound.
 */

const KEY = 'shared-invalidation-key-0123456789';

interface Endpoint {
  readonly url: string;
  readonly received: Array<{ authorization: string | undefined; contentType: string | undefined; body: unknown }>;
  close(): Promise<void>;
}

/** An endpoint that answers each POST with the next status of `statuses` (the last one repeated); `null`: never answers. */
async function endpoint(statuses: Array<number | null>): Promise<Endpoint> {
  const received: Endpoint['received'] = [];
  const hanging: ServerResponse[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let text = '';
    req.on('data', (chunk) => (text += String(chunk)));
    req.on('end', () => {
      received.push({ authorization: req.headers.authorization, contentType: req.headers['content-type'], body: JSON.parse(text) });
      const status = statuses[Math.min(received.length - 1, statuses.length - 1)]!;
      if (status === null) return void hanging.push(res);
      res.writeHead(status, { 'content-type': 'application/json' }).end('{"count":1}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/invalidation`,
    received,
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

let endpoints: Endpoint[] = [];
afterEach(async () => {
  await Promise.all(endpoints.map((e) => e.close()));
  endpoints = [];
});
const start = async (statuses: Array<number | null>) => {
  const made = await endpoint(statuses);
  endpoints.push(made);
  return made;
};

function sender(urls: string[], options: Partial<ConstructorParameters<typeof InvalidationSender>[0]> = {}) {
  const outcomes: InvalidationOutcome[] = [];
  const made = new InvalidationSender({ urls, key: KEY, onOutcome: (outcome) => outcomes.push(outcome), backoffMs: 1, ...options });
  return { sender: made, outcomes };
}

describe('InvalidationSender', () => {
  it("POSTs Apollo Router's cache_tag invalidation to every endpoint, with the key as Authorization", async () => {
    const [one, two] = [await start([200]), await start([200])];
    const { sender: s, outcomes } = sender([one.url, two.url]);
    s.invalidate(['wfs-abc:locations']);
    await s.settled();
    for (const e of [one, two]) {
      expect(e.received).toEqual([{ authorization: KEY, contentType: 'application/json', body: [{ kind: 'cache_tag', subgraphs: ['wfs'], cache_tag: 'wfs-abc:locations' }] }]);
    }
    expect(outcomes).toEqual(['sent', 'sent']);
  });

  it('sends the tags queued while a batch is in flight together, once each', async () => {
    const e = await start([200]);
    const { sender: s } = sender([e.url]);
    s.invalidate(['t1']);
    s.invalidate(['t2', 't3', 't2']);
    s.invalidate(['t3']);
    await s.settled();
    expect(e.received.map((r) => (r.body as Array<{ cache_tag: string }>).map((item) => item.cache_tag))).toEqual([['t1'], ['t2', 't3']]);
  });

  it('retries a failing endpoint with backoff, up to its attempts', async () => {
    const recovers = await start([503, 503, 200]);
    const { sender: s, outcomes } = sender([recovers.url], { attempts: 3 });
    s.invalidate(['t']);
    await s.settled();
    expect(recovers.received).toHaveLength(3);
    expect(outcomes).toEqual(['sent']);

    const down = await start([500]);
    const failing = sender([down.url], { attempts: 3 });
    failing.sender.invalidate(['t']);
    await failing.sender.settled();
    expect(down.received).toHaveLength(3);
    expect(failing.outcomes).toEqual(['failed']);
  });

  it('does not retry a refusal (a wrong key)', async () => {
    const e = await start([401]);
    const { sender: s, outcomes } = sender([e.url]);
    s.invalidate(['t']);
    await s.settled();
    expect(e.received).toHaveLength(1);
    expect(outcomes).toEqual(['rejected']);
  });

  it('gives up at its deadline on an endpoint that never answers', async () => {
    const e = await start([null]);
    const { sender: s, outcomes } = sender([e.url], { deadlineMs: 200 });
    s.invalidate(['t']);
    await s.settled();
    expect(outcomes).toEqual(['failed']);
  });

  it('drops, and counts, tags past its queue bound', async () => {
    const e = await start([200]);
    const { sender: s, outcomes } = sender([e.url], { maxQueued: 2 });
    s.invalidate(['t1', 't2', 't3', 't4']);
    await s.settled();
    expect(outcomes.filter((outcome) => outcome === 'dropped')).toHaveLength(2);
    expect((e.received[0]!.body as unknown[]).length).toBe(2);
  });
});
