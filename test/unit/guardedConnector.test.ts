import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LookupAddress } from 'node:dns';
import { request, type Dispatcher } from 'undici';
import { DEFAULT_TIMEOUTS, createUpstreamAgent } from '../../src/upstream/transport/http';

/*
 * The guarded connector checks the address actually connected to. Names resolve
 * through an injected resolver (no DNS server, no outside network): every address in
 * these tests is either loopback (a real server here) or refused before any socket.
 */

let server: Server;
let port: number;
let hits = 0;
const agents: Dispatcher[] = [];

beforeAll(async () => {
  server = createServer((_req, res) => {
    hits += 1;
    // A fresh connection per request, so every request goes through the connector.
    res.writeHead(200, { connection: 'close', 'content-type': 'text/plain' });
    res.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await Promise.all(agents.map((agent) => agent.close()));
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function guarded(answers: Array<LookupAddress[]>, allowList: string[] = []) {
  const resolved: string[] = [];
  const connects: string[] = [];
  let call = 0;
  const agent = createUpstreamAgent(DEFAULT_TIMEOUTS, {
    allowList,
    resolve: async (hostname) => {
      resolved.push(hostname);
      return answers[Math.min(call++, answers.length - 1)]!;
    },
    onConnect: (hostname) => connects.push(hostname),
  });
  agents.push(agent);
  const get = async (url: string) => {
    try {
      const response = await request(url, { dispatcher: agent });
      await response.body.dump();
      return response.statusCode;
    } catch (error) {
      return (error as { code?: string }).code ?? String(error);
    }
  };
  return { get, resolved, connects };
}

const v4 = (address: string): LookupAddress => ({ address, family: 4 });

describe('guarded connector', () => {
  it('connects to a name that resolves to loopback', async () => {
    const g = guarded([[v4('127.0.0.1')]]);
    expect(await g.get(`http://shard.test:${port}/`)).toBe(200);
    expect(g.resolved).toEqual(['shard.test']);
  });

  it('refuses a name that resolves to a private or metadata address, without connecting', async () => {
    const before = hits;
    for (const address of ['10.0.0.1', '169.254.169.254', '100.64.1.1', '192.168.0.10']) {
      const g = guarded([[v4(address)]]);
      expect(await g.get(`http://shard.test:${port}/`)).toBe('UPSTREAM_MISCONFIGURED');
    }
    const six = guarded([[{ address: 'fd00:ec2::254', family: 6 }]]);
    expect(await six.get(`http://shard.test:${port}/`)).toBe('UPSTREAM_MISCONFIGURED');
    const mixed = guarded([[v4('127.0.0.1'), v4('10.0.0.1')]]);
    expect(await mixed.get(`http://shard.test:${port}/`)).toBe('UPSTREAM_MISCONFIGURED');
    expect(hits).toBe(before);
  });

  it('checks every new connection, so DNS rebinding cannot pass', async () => {
    const g = guarded([[v4('127.0.0.1')], [v4('10.0.0.1')]]);
    expect(await g.get(`http://rebind.test:${port}/`)).toBe(200);
    expect(await g.get(`http://rebind.test:${port}/`)).toBe('UPSTREAM_MISCONFIGURED');
    expect(g.resolved).toEqual(['rebind.test', 'rebind.test']);
  });

  it('refuses IP literals however written, before any socket', async () => {
    const g = guarded([[v4('127.0.0.1')]]);
    for (const url of ['http://10.0.0.1/', 'http://2852039166/', 'http://0xA9FEA9FE/', 'http://[::ffff:10.0.0.1]/', 'http://[fd00:ec2::254]/']) {
      expect(await g.get(url)).toBe('UPSTREAM_MISCONFIGURED');
    }
    expect(g.resolved).toEqual([]);
  });

  it('never lets an allow-listed name reach a metadata address', async () => {
    const g = guarded([[v4('169.254.169.254')]], ['shard.internal']);
    expect(await g.get(`http://shard.internal:${port}/`)).toBe('UPSTREAM_MISCONFIGURED');
  });
});
