import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';

/**
 * A TCP (layer 4) balancer as a cloud load balancer or HAProxy in `mode tcp` is one: each
 * client connection is piped whole to one backend, chosen round-robin among those whose
 * `/ready` answered 200 at its last health check, every `pollMs`. It knows nothing of
 * HTTP: a kept-alive client connection stays on its backend until one side closes it,
 * and a backend that refuses the connection resets the client's (counted in `refused`).
 */
export interface ReadyBalancer {
  /** Where clients connect: `http://127.0.0.1:<port>`. */
  readonly origin: string;
  /** Whether the last health check of `backend` (an origin) answered 200. */
  inRotation(backend: string): boolean;
  /** Client connections piped to `backend` so far. */
  connections(backend: string): number;
  /** Client connections reset because the chosen backend refused or dropped the connection. */
  readonly refused: number;
  close(): Promise<void>;
}

export async function startReadyBalancer(backends: readonly string[], pollMs: number): Promise<ReadyBalancer> {
  const ready = new Map(backends.map((backend) => [backend, false]));
  const piped = new Map(backends.map((backend) => [backend, 0]));
  const sockets = new Set<Socket>();
  let refused = 0;
  let next = 0;
  let closed = false;

  // Health checks on connections of their own, as a balancer's are (never the pooled ones).
  const checks = new Agent({ pipelining: 0 });
  const check = async (backend: string): Promise<void> => {
    try {
      const answer = await request(`${backend}/ready`, { dispatcher: checks, headersTimeout: 2_000, bodyTimeout: 2_000 });
      await answer.body.dump();
      ready.set(backend, answer.statusCode === 200);
    } catch {
      ready.set(backend, false);
    }
  };
  let timer: NodeJS.Timeout | undefined;
  const poll = async (): Promise<void> => {
    await Promise.all(backends.map(check));
    if (!closed) timer = setTimeout(() => void poll(), pollMs);
  };
  await poll();

  const server: Server = createServer((client) => {
    sockets.add(client);
    client.once('close', () => sockets.delete(client));
    const inRotation = backends.filter((backend) => ready.get(backend));
    if (inRotation.length === 0) {
      refused += 1;
      return void client.resetAndDestroy();
    }
    const backend = inRotation[next++ % inRotation.length]!;
    piped.set(backend, piped.get(backend)! + 1);
    const { hostname, port } = new URL(backend);
    const upstream = connect({ host: hostname, port: Number(port) });
    sockets.add(upstream);
    upstream.once('close', () => sockets.delete(upstream));
    let connected = false;
    upstream.once('connect', () => (connected = true));
    // A refused or reset backend connection resets the client's, as a TCP balancer does.
    upstream.on('error', () => {
      if (!connected) refused += 1;
      client.resetAndDestroy();
    });
    client.on('error', () => upstream.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    origin: `http://127.0.0.1:${port}`,
    inRotation: (backend) => ready.get(backend) === true,
    connections: (backend) => piped.get(backend) ?? 0,
    get refused() {
      return refused;
    },
    async close() {
      closed = true;
      clearTimeout(timer);
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await checks.close();
    },
  };
}
