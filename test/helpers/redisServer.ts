import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './fixtures';
import { waitFor } from './waitFor';

export interface RedisTestServer {
  /** `redis://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
}

/** The binary to run; `REDIS_SERVER` overrides the one on PATH. */
const binary = process.env.REDIS_SERVER ?? 'redis-server';
const READY_TIMEOUT_MS = 10_000;

/**
 * A real `redis-server` on 127.0.0.1 and a free port, without persistence, for the
 * tests of the shared token store. A missing binary is an error, not a skipped test:
 * the README's test command installs it (Debian package `redis-server`).
 */
export async function startRedisServer(): Promise<RedisTestServer> {
  // Another process may take the port between our probe and redis-server's bind:
  // that shows as redis-server exiting early, so try a few ports.
  let lastError: Error | undefined;
  for (let attempt = 0; attempt < 3; attempt += 1) {
    try {
      return await startOnce(await freePort());
    } catch (error) {
      if ((error as { code?: unknown }).code === 'ENOENT') {
        throw new Error(
          `redis-server is not installed (could not run "${binary}"): the Redis integration tests need it. ` +
            'Install it with `apt-get install -y redis-server` (or set REDIS_SERVER to the binary).',
          { cause: error },
        );
      }
      lastError = error as Error;
    }
  }
  throw lastError ?? new Error('redis-server did not start');
}

async function startOnce(port: number): Promise<RedisTestServer> {
  const dir = mkdtempSync(join(tmpdir(), 'wfs-redis-'));
  const child = spawn(
    binary,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--daemonize', 'no', '--loglevel', 'warning'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  // Kept for the error message when it does not start; bounded.
  let output = '';
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4_000);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);

  const exited = new Promise<never>((_, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => reject(new Error(`redis-server exited (${signal ?? code}) before answering PING: ${output.trim()}`)));
  });
  exited.catch(() => undefined);

  try {
    await Promise.race([waitForPong(port), exited]);
  } catch (error) {
    await kill(child);
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }

  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async stop() {
      await kill(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function waitForPong(port: number): Promise<void> {
  return waitFor(() => pings(port), `redis-server on port ${port} to answer PING`, READY_TIMEOUT_MS);
}

/** One inline PING over a raw socket: no client library, no reconnect loop to stop. */
function pings(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    let reply = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString();
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
  });
}

/** SIGTERM, then SIGKILL if it has not exited after 2 s; resolves once it is gone. */
function kill(child: ChildProcess): Promise<void> {
  // No pid: it never started (the binary is missing), so there is nothing to wait for.
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), 2_000);
    child.once('exit', () => {
      clearTimeout(force);
      child.stdout?.destroy();
      child.stderr?.destroy();
      resolve();
    });
    child.kill('SIGTERM');
  });
}
