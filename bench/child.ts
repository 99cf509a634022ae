import { readFileSync } from 'node:fs';

/** What `startServerProcess` (processes.ts) gives a reference server's process: upstream, tenants, address. */
export function childSettings<T>(defaultPort: number): { authUrl: string; tenants: T[]; port: number; host: string } {
  return {
    authUrl: process.env.WFS_AUTH_URL!.replace(/\/+$/, ''),
    tenants: JSON.parse(readFileSync(process.env.WFS_TENANTS_FILE!, 'utf8')) as T[],
    port: Number(process.env.PORT ?? defaultPort),
    host: process.env.HOST ?? '127.0.0.1',
  };
}

/**
 * Runs a reference server (floor, proxy, naive) as the bench's child process: tells the
 * parent its URL once it listens, stops on SIGTERM or when the parent goes away, and
 * exits 1 with the stack when it cannot start.
 */
export function serveAsChild(label: string, started: Promise<{ url: string; stop(): Promise<void> }>): void {
  started.then(
    ({ url, stop }) => {
      process.send?.({ type: 'ready', url });
      const shutdown = () => void stop().finally(() => process.exit(0));
      process.on('SIGTERM', shutdown);
      process.on('disconnect', shutdown);
    },
    (error: unknown) => {
      process.stderr.write(`${label}: ${error instanceof Error ? error.stack : String(error)}\n`);
      process.exit(1);
    },
  );
}
