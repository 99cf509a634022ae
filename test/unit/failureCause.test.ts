import { createServer as createHttpServer } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { Agent, request } from 'undici';
import { causeOfNetworkError } from '../../src/upstream/failureCause';
import { listen } from '../helpers/fixtures';

/**
 * The causes are read from the errors undici really throws: each case provokes the
 * fault on loopback and classifies what came back.
 */
async function failureOf(url: string, agentOptions: Agent.Options = {}, signal?: AbortSignal): Promise<unknown> {
  const agent = new Agent({ keepAliveTimeout: 10, ...agentOptions });
  try {
    const response = await request(url, { dispatcher: agent, ...(signal && { signal }) });
    await response.body.dump();
    throw new Error('expected the request to fail');
  } catch (error) {
    return error;
  } finally {
    await agent.destroy();
  }
}

describe('causeOfNetworkError', () => {
  it('refused: nothing listens on the port', async () => {
    const server = createNetServer();
    const port = await listen(server);
    await new Promise((resolve) => server.close(resolve));
    expect(causeOfNetworkError(await failureOf(`http://127.0.0.1:${port}/`))).toBe('refused');
  });

  it('reset: the shard closes the connection mid-exchange', async () => {
    const server = createNetServer((socket) => socket.on('data', () => socket.destroy()));
    const port = await listen(server);
    try {
      expect(causeOfNetworkError(await failureOf(`http://127.0.0.1:${port}/`))).toBe('reset');
    } finally {
      server.close();
    }
  });

  it('timeout: the shard accepts and never answers', async () => {
    const sockets = new Set<import('node:net').Socket>();
    const server = createNetServer((socket) => sockets.add(socket));
    const port = await listen(server);
    try {
      expect(causeOfNetworkError(await failureOf(`http://127.0.0.1:${port}/`, { headersTimeout: 50 }))).toBe('timeout');
    } finally {
      for (const socket of sockets) socket.destroy();
      server.close();
    }
  });

  it('tls: https to a shard that speaks plain HTTP', async () => {
    const server = createHttpServer((_req, res) => res.end('plain'));
    const port = await listen(server);
    try {
      expect(causeOfNetworkError(await failureOf(`https://127.0.0.1:${port}/`))).toBe('tls');
    } finally {
      server.close();
    }
  });

  it('timeout or aborted: decided by the reason of the call signal', async () => {
    const sockets = new Set<import('node:net').Socket>();
    const server = createNetServer((socket) => sockets.add(socket));
    const port = await listen(server);
    try {
      const deadline = AbortSignal.timeout(30);
      expect(causeOfNetworkError(await failureOf(`http://127.0.0.1:${port}/`, {}, deadline), deadline)).toBe('timeout');
      const caller = new AbortController();
      const failure = failureOf(`http://127.0.0.1:${port}/`, {}, caller.signal);
      caller.abort();
      expect(causeOfNetworkError(await failure, caller.signal)).toBe('aborted');
    } finally {
      for (const socket of sockets) socket.destroy();
      server.close();
    }
  });

  it('dns and address_refused by their codes', () => {
    expect(causeOfNetworkError(Object.assign(new Error('getaddrinfo ENOTFOUND shard.invalid'), { code: 'ENOTFOUND' }))).toBe('dns');
    expect(causeOfNetworkError(Object.assign(new Error('refused'), { code: 'WFS_ADDRESS_REFUSED' }))).toBe('address_refused');
    expect(causeOfNetworkError(new Error('something else'))).toBe('network');
  });
});
