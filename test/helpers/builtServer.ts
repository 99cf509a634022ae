import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { waitFor } from './waitFor';

/** The flags the project ships (package.json "start", the Dockerfile): V8's heap sized for a 512Mi container. */
export const SHIPPED_NODE_FLAGS = ['--max-semi-space-size=8', '--max-old-space-size=256'] as const;

/** dist/index.js; BUILT_SERVER_ENTRY names another build's, to run a suite against it (an earlier commit's, to see a test fail there). */
const entry = process.env.BUILT_SERVER_ENTRY ?? join(__dirname, '..', '..', 'dist', 'index.js');

export interface BuiltServer {
  /** The GraphQL endpoint the server printed. */
  readonly url: string;
  readonly child: ChildProcessWithoutNullStreams;
  stdout(): string;
  stderr(): string;
  /** Whether the process is still running. */
  alive(): boolean;
  /** Resolves once `/ready` answers 200 (the token endpoint check passed). */
  untilReady(): Promise<void>;
  /** Kills the process (SIGKILL: a test's teardown, not a shutdown under test) and waits for it to go. */
  stop(): Promise<void>;
}

/**
 * `node <shipped flags> dist/index.js` as a deployment runs it, with `env` (PORT 0 and
 * 127.0.0.1 unless given; demo mode when no upstream is configured), once it printed
 * its URL. `scripts/test.sh` builds before jest runs.
 */
export async function startBuiltServer(env: Record<string, string> = {}, nodeFlags: readonly string[] = SHIPPED_NODE_FLAGS): Promise<BuiltServer> {
  if (!existsSync(entry)) throw new Error('dist/index.js is missing: run `npm run build` first (scripts/test.sh does)');
  const child = spawn(process.execPath, [...nodeFlags, entry], { cwd: '/', env: { PATH: process.env.PATH ?? '', PORT: '0', HOST: '127.0.0.1', ...env } });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk) => (out += String(chunk)));
  child.stderr.on('data', (chunk) => (err += String(chunk)));
  const exit = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  let url: string | undefined;
  try {
    await waitFor(() => {
      if (child.exitCode !== null) throw new Error(`the server exited (${child.exitCode}): ${err.slice(-2000)}`);
      url = /GraphQL:\s+(http:\S+)/.exec(out)?.[1] ?? /"url":"(http:[^"]+)"/.exec(out)?.[1];
      return url !== undefined;
    }, 'the built server to print its URL', 20_000);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  return {
    url: url!,
    child,
    stdout: () => out,
    stderr: () => err,
    alive: () => child.exitCode === null && child.signalCode === null,
    untilReady: () =>
      waitFor(async () => {
        const ready = await request(new URL('/ready', url!));
        await ready.body.dump();
        return ready.statusCode === 200;
      }, 'ready'),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exit;
      }
    },
  };
}
