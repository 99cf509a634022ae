import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
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
  /** Its stop signal (SIGTERM, the subgraph's SIGINT), then SIGKILL after 5 s; resolves when the process is gone. */
  stop(): Promise<void>;
}

const children = new Set<Child>();

// However the bench ends, no child outlives it.
process.on('exit', () => {
  for (const child of children) child.process.kill('SIGKILL');
});

/**
 * CPU pinning: the server under test on core 0, the emulator and this load generator
 * on core 1 (`taskset`, from util-linux). Null where there is no taskset or fewer than
 * two cores: then nothing is pinned, and the report says so.
 */
export const PINNING: { readonly taskset: string; readonly subject: number; readonly rest: number } | null = (() => {
  if (os.cpus().length < 2 || process.platform !== 'linux') return null;
  const taskset = ['/usr/bin/taskset', '/bin/taskset'].find((path) => existsSync(path));
  return taskset ? { taskset, subject: 0, rest: 1 } : null;
})();

/** Pins this process (every thread of it) to the load generator's core. */
export function pinSelf(): void {
  if (PINNING) execFileSync(PINNING.taskset, ['-a', '-cp', String(PINNING.rest), String(process.pid)], { stdio: 'ignore' });
}

/**
 * Forks `modulePath` (a Node script) as a child of the bench: its output's tail kept, stopped
 * with `stop()` (by `stopSignal`), and killed when this process exits however it ends. `cpu`:
 * the core to pin it to (PINNING), or none.
 */
export function startChild(name: string, modulePath: string, args: string[], env: NodeJS.ProcessEnv, execArgv: string[] = [], cpu?: number, stopSignal: NodeJS.Signals = 'SIGTERM'): Child {
  // fork() through taskset: taskset execs node in place, so the pid, the pipes and the IPC channel stay the same.
  const pinned = PINNING && cpu !== undefined ? PINNING : null;
  const proc = fork(modulePath, args, {
    env,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    ...(pinned ? { execPath: pinned.taskset, execArgv: ['-c', String(cpu), process.execPath, ...execArgv] } : { execArgv }),
  });
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
        proc.kill(stopSignal);
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
  const child = startChild('emulator', join(__dirname, 'emulatorProcess.js'), [JSON.stringify(options)], { ...process.env, NODE_ENV: 'production' }, [], PINNING?.rest);
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

export type ServerTarget = 'naive' | 'apollo' | 'subgraph' | 'subgraph-f5' | 'today' | 'today-f5' | 'floor' | 'floor-f5' | 'proxy';

/**
 * The builds of the subgraph and the window each runs with (docs/caching.md): this
 * checkout's at 0 (every read upstream) and at 5 s, and today's build (BENCH_BASELINE_DIST)
 * at its default and at 5 s. `today` gets no setting, so a build from before the window
 * existed (which refuses unknown `WFS_*` names) can be the baseline too.
 */
const SUBGRAPH_BUILDS: Partial<Record<ServerTarget, { readonly build: 'this' | 'today'; readonly freshnessSeconds: string | null }>> = {
  subgraph: { build: 'this', freshnessSeconds: '0' },
  'subgraph-f5': { build: 'this', freshnessSeconds: '5' },
  today: { build: 'today', freshnessSeconds: null },
  'today-f5': { build: 'today', freshnessSeconds: '5' },
};

export interface ServerProcessOptions {
  readonly authUrl: string;
  readonly tenantsFile: string;
  /** Directory for a V8 CPU profile of the server, or null. */
  readonly profileDir: string | null;
  /** The subgraph's entry point; default dist/index.js. */
  readonly subgraphEntry?: string | null;
  /** Today's build's entry point (targets `today`, `today-f5`); null: none. */
  readonly baselineEntry?: string | null;
  /** The subgraph's NODE_COMPILE_CACHE directory (one per bench run). */
  readonly compileCacheDir?: string | null;
  /** Extra V8/Node flags for the server (e.g. --trace-gc). */
  readonly execArgv?: readonly string[];
  /** NODE_OPTIONS for every server (the deployment's runtime flags), or null. */
  readonly nodeOptions?: string | null;
  /** More settings for the server (`WFS_*`), on top of the common ones and the target's own (a caller's window wins over the target's). */
  readonly env?: Readonly<Record<string, string>>;
}

/** Environment every GraphQL server gets: loopback, production mode, quiet logs. */
function serverEnv(port: number, options: ServerProcessOptions): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: String(port),
    WFS_AUTH_URL: options.authUrl,
    WFS_TENANTS_FILE: options.tenantsFile,
    WFS_CURSOR_SECRET: 'bench-cursor-secret-0123456789abcdef0123',
    // Production rules: the emulator's shards are on loopback, and the load sends the tenant header itself.
    WFS_API_BASE_ALLOW: '127.0.0.1',
    WFS_TRUSTED_NETWORK: 'true',
    LOG_LEVEL: 'error',
    ...(options.nodeOptions && { NODE_OPTIONS: options.nodeOptions }),
  };
}

/** How to run each server: its module, its extra environment, how it says it is ready. */
function serverSpec(target: ServerTarget, options: ServerProcessOptions): { module: string; env: NodeJS.ProcessEnv; ready: 'ipc' | 'health'; stopSignal?: NodeJS.Signals } {
  const subgraph = SUBGRAPH_BUILDS[target];
  if (subgraph) {
    const entry = subgraph.build === 'this' ? (options.subgraphEntry ?? join(repoRoot(), 'dist', 'index.js')) : options.baselineEntry;
    if (!entry) throw new Error(`${target}: no build of today to run (set BENCH_BASELINE_DIST)`);
    return {
      module: resolve(entry),
      env: {
        ...(options.compileCacheDir && { NODE_COMPILE_CACHE: options.compileCacheDir }),
        ...(subgraph.freshnessSeconds !== null && { WFS_FRESHNESS_SECONDS: subgraph.freshnessSeconds }),
      },
      ready: 'health',
      // SIGTERM would drain for WFS_DRAIN_SECONDS (src/main.ts) and meet the SIGKILL 5 s
      // later, losing a CPU profile; SIGINT stops at once.
      stopSignal: 'SIGINT',
    };
  }
  switch (target) {
    case 'naive':
      return { module: join(__dirname, 'naive', 'server.js'), env: {}, ready: 'ipc' };
    case 'apollo':
      return { module: join(__dirname, 'naive', 'server.js'), env: { BENCH_NAIVE_LEAN: '1' }, ready: 'ipc' };
    case 'floor':
    case 'proxy':
      return { module: join(__dirname, 'floor', 'server.js'), env: { BENCH_FLOOR_MODE: target === 'floor' ? 'graphql' : 'proxy' }, ready: 'ipc' };
    case 'floor-f5':
      return { module: join(__dirname, 'floor', 'server.js'), env: { BENCH_FLOOR_MODE: 'graphql', BENCH_FLOOR_KEEP_MS: '5000' }, ready: 'ipc' };
    default:
      throw new Error(`unknown server ${target}`);
  }
}

/** Starts one GraphQL server (pinned to the subject core) and waits until it is ready. */
export async function startServerProcess(target: ServerTarget, options: ServerProcessOptions): Promise<ServerChild> {
  const port = await freePort();
  const spec = serverSpec(target, options);
  const child = startChild(target, spec.module, [], { ...serverEnv(port, options), ...spec.env, ...options.env }, [...profileArgs(target, options.profileDir), ...(options.execArgv ?? [])], PINNING?.subject, spec.stopSignal);
  const base = `http://127.0.0.1:${port}`;
  if (spec.ready === 'health') await untilReady(child, waitForHealth(`${base}/health`, child));
  else await untilReady(child, firstMessage<{ url: string }>(child, 'ready'));
  return { child, url: `${base}/graphql`, stop: () => child.stop() };
}

/**
 * Cold start: from spawning the process to the first correct answer of `probe`
 * (which throws until the answer is right), the way an autoscaler sees a new replica.
 * The server is stopped again afterwards.
 */
export async function measureColdStart(target: ServerTarget, options: ServerProcessOptions, probe: (url: string) => Promise<void>): Promise<number> {
  const port = await freePort();
  const spec = serverSpec(target, options);
  const url = `http://127.0.0.1:${port}/graphql`;
  const started = performance.now();
  const child = startChild(`${target} (cold start)`, spec.module, [], { ...serverEnv(port, options), ...spec.env, ...options.env }, [], PINNING?.subject, spec.stopSignal);
  try {
    const deadline = started + 30_000;
    for (;;) {
      if (child.process.exitCode !== null) throw new Error(`${target} exited during its cold start:\n${child.output()}`);
      try {
        await probe(url);
        return performance.now() - started;
      } catch (error) {
        if (performance.now() > deadline) throw new Error(`${target} gave no correct answer within 30 s: ${String(error)}`, { cause: error });
        await new Promise((r) => setTimeout(r, 2));
      }
    }
  } finally {
    await child.stop();
  }
}

/** The process's peak resident set (VmHWM) so far, in MiB; null where /proc is missing. */
export function peakRssMiB(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Math.round(Number(match[1]) / 102.4) / 10 : null;
  } catch {
    return null;
  }
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
