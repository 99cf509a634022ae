import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { request } from 'undici';
import type { EmulatorProcessOptions, EmulatorReady, UpstreamCounters } from './emulatorProcess';
import { repoRoot } from './settings';

/** A child process of the bench, with the tail of what it wrote (for error reports). */
export interface Child {
  readonly name: string;
  readonly process: ChildProcess;
  /** The last 64 KiB of stdout and stderr. */
  output(): string;
  /** SIGTERM, then SIGKILL after 5 s; resolves when the process is gone. */
  stop(): Promise<void>;
}

const children = new Set<Child>();

// However the bench ends, no child outlives it.
process.on('exit', () => {
  for (const child of children) child.process.kill('SIGKILL');
});

function startChild(name: string, modulePath: string, args: string[], env: NodeJS.ProcessEnv, execArgv: string[] = []): Child {
  const proc = fork(modulePath, args, { env, execArgv, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  let tail = '';
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-65_536);
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const child: Child = {
    name,
    process: proc,
    output: () => tail,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        const timer = setTimeout(() => proc.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }
      children.delete(child);
    },
  };
  children.add(child);
  return child;
}

/** Rejects when the child exits before `ready` settles, with what it wrote. */
function untilReady<T>(child: Child, ready: Promise<T>, timeoutMs = 30_000): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`${child.name} exited (code ${code}) before it was ready:\n${child.output()}`));
    const timer = setTimeout(() => reject(new Error(`${child.name} was not ready after ${timeoutMs} ms:\n${child.output()}`)), timeoutMs);
    child.process.once('exit', onExit);
    ready.then(
      (value) => {
        clearTimeout(timer);
        child.process.off('exit', onExit);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        child.process.off('exit', onExit);
        reject(error);
      },
    );
  });
}

function firstMessage<T>(child: Child, type: string): Promise<T> {
  return new Promise<T>((resolve) => {
    const onMessage = (message: { type?: string }) => {
      if (message?.type !== type) return;
      child.process.off('message', onMessage);
      resolve(message as T);
    };
    child.process.on('message', onMessage);
  });
}

/** A port that was free a moment ago, on loopback. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

function profileArgs(name: string, profileDir: string | null): string[] {
  return profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir, '--cpu-prof-name', `${name}-${Date.now()}.cpuprofile`] : [];
}

export interface EmulatorChild {
  readonly child: Child;
  readonly ready: EmulatorReady;
  counters(): Promise<UpstreamCounters>;
  resetCounters(): Promise<void>;
  stop(): Promise<void>;
}

export async function startEmulatorProcess(options: EmulatorProcessOptions): Promise<EmulatorChild> {
  const child = startChild('emulator', join(__dirname, 'emulatorProcess.js'), [JSON.stringify(options)], { ...process.env, NODE_ENV: 'production' });
  const ready = await untilReady(child, firstMessage<EmulatorReady>(child, 'ready'));
  let nextId = 1;
  const call = <T>(op: string): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const id = nextId++;
      const onMessage = (message: { id?: number; result?: T; error?: string }) => {
        if (message?.id !== id) return;
        child.process.off('message', onMessage);
        if (message.error) reject(new Error(message.error));
        else resolve(message.result as T);
      };
      child.process.on('message', onMessage);
      child.process.send({ id, op });
    });
  return {
    child,
    ready,
    counters: () => call<UpstreamCounters>('counters'),
    resetCounters: async () => {
      await call('reset');
    },
    async stop() {
      if (child.process.connected) await Promise.race([call('close').catch(() => undefined), new Promise((r) => setTimeout(r, 3_000))]);
      await child.stop();
    },
  };
}

export interface ServerChild {
  readonly child: Child;
  readonly url: string;
  stop(): Promise<void>;
}

export interface ServerProcessOptions {
  readonly authUrl: string;
  readonly tenantsFile: string;
  /** Directory for a V8 CPU profile of the server, or null. */
  readonly profileDir: string | null;
  /** The subgraph's entry point; default dist/index.js. */
  readonly subgraphEntry?: string | null;
}

/** Environment both GraphQL servers get: loopback, production mode, quiet logs. */
function serverEnv(port: number, options: ServerProcessOptions): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: String(port),
    WFS_AUTH_URL: options.authUrl,
    WFS_TENANTS_FILE: options.tenantsFile,
    WFS_CURSOR_SECRET: 'bench-cursor-secret-0123456789abcdef0123',
    LOG_LEVEL: 'error',
  };
}

/** The product, as deployed: `node dist/index.js` configured through its environment. */
export async function startSubgraphProcess(options: ServerProcessOptions): Promise<ServerChild> {
  const port = await freePort();
  const child = startChild('subgraph', resolve(options.subgraphEntry ?? join(repoRoot(), 'dist', 'index.js')), [], serverEnv(port, options), profileArgs('subgraph', options.profileDir));
  const base = `http://127.0.0.1:${port}`;
  await untilReady(child, waitForHealth(`${base}/health`, child));
  return { child, url: `${base}/graphql`, stop: () => child.stop() };
}

/** The naive baseline in bench/naive/server.ts. */
export async function startNaiveProcess(options: ServerProcessOptions): Promise<ServerChild> {
  const port = await freePort();
  const child = startChild('naive', join(__dirname, 'naive', 'server.js'), [], serverEnv(port, options), profileArgs('naive', options.profileDir));
  const ready = await untilReady(child, firstMessage<{ url: string }>(child, 'ready'));
  return { child, url: new URL('/', ready.url.replace('localhost', '127.0.0.1')).href, stop: () => child.stop() };
}

async function waitForHealth(url: string, child: Child): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (child.process.exitCode === null && child.process.signalCode === null && Date.now() < deadline) {
    try {
      const response = await request(url);
      await response.body.dump();
      if (response.statusCode === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${child.name} did not answer ${url} with 200:\n${child.output()}`);
}

let clockTicks: number | undefined;

/**
 * CPU time (user + system) a process has used so far, in ms, from /proc (Linux);
 * null where /proc is not available.
 */
export function cpuTimeMs(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces) start at state, field 3.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    if (clockTicks === undefined) {
      try {
        clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
      } catch {
        clockTicks = 100;
      }
    }
    return (ticks * 1000) / clockTicks;
  } catch {
    return null;
  }
}
