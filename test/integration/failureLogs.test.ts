import { createServer as createHttpServer } from 'node:http';
import { createServer as createNetServer, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { Agent, type Dispatcher } from 'undici';
import { createLogger } from '../../src/observability/logger';
import { createMetrics } from '../../src/observability/metrics';
import { composeObservers } from '../../src/observability';
import { runInScope } from '../../src/observability/requestScope';
import type { RequestRecord } from '../../src/upstream/observer';
import { createUpstreamObserver } from '../../src/observability/upstreamObserver';
import { WfsClient } from '../../src/upstream/client';
import { TokenCache } from '../../src/upstream/token/tokenCache';
import { shifts } from '../../src/upstream/resources';
import { listen } from '../helpers/fixtures';

/**
 * One "upstream call failed" line per network cause, each provoked for real on
 * loopback through the production client, observer and logger: a port nobody
 * listens on, a shard that resets, one that never answers, one that speaks plain
 * HTTP to our TLS, and a name that does not resolve (a resolver that answers
 * ENOTFOUND, as getaddrinfo does). The line names the origin, never the path, the
 * page reference or the token.
 */

const TOKEN = 'access-token-that-must-never-be-logged-7f3a';

/** Calls `shifts` once at `apiBase` and returns the failure line it logged. */
async function failureLine(apiBase: string, dispatcher: Dispatcher = new Agent({ keepAliveTimeout: 10 }), deadlineMs = 10_000): Promise<Record<string, unknown>> {
  const output: string[] = [];
  const logger = createLogger('info', new Writable({ write: (chunk, _encoding, done) => (output.push(String(chunk)), done()) }));
  const metrics = createMetrics();
  const observer = createUpstreamObserver(logger, metrics);
  const tokens = new TokenCache({
    tenants: [{ tenantId: 'tenant-1', clientId: 'c', clientSecret: 's', scope: 'shifts.read' }],
    fetchToken: async () => ({ accessToken: TOKEN, tenantId: 'tenant-1', apiBase, scopes: ['shifts.read'], obtainedAt: Date.now(), expiresAt: Date.now() + 900_000 }),
  });
  const client = new WfsClient({ tokens, dispatcher, deadlineMs, observer: composeObservers([observer]) });
  const scope: RequestRecord = { requestId: 'req-causes', startedAt: 0, aborted: false, upstreamCalls: 0, coalesced: 0 };
  try {
    await expect(runInScope(scope, () => client.listPage('tenant-1', shifts, { ref: 'cursor-secret-page-9' }))).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
  } finally {
    observer.close();
    metrics.close();
    await dispatcher.destroy();
  }
  const lines = output.map((line) => JSON.parse(line) as Record<string, unknown>);
  const failures = lines.filter((line) => line.event === 'upstream_call_failed');
  expect(failures).toHaveLength(1);
  const text = output.join('');
  expect(text).not.toContain(TOKEN);
  expect(text).not.toMatch(/cursor-secret|\/api\/|page_size/);
  return failures[0]!;
}

const common = { level: 40, requestId: 'req-causes', tenantId: 'tenant-1', list: 'shifts', code: 'UPSTREAM_UNAVAILABLE', attempts: 2 };

describe('upstream failure lines by cause', () => {
  it('refused', async () => {
    const server = createNetServer();
    const port = await listen(server);
    await new Promise((resolve) => server.close(resolve));
    expect(await failureLine(`http://127.0.0.1:${port}`)).toMatchObject({ ...common, origin: `http://127.0.0.1:${port}`, cause: 'refused' });
  });

  it('reset', async () => {
    const server = createNetServer((socket) => socket.on('data', () => socket.destroy()));
    const port = await listen(server);
    try {
      expect(await failureLine(`http://127.0.0.1:${port}`)).toMatchObject({ ...common, origin: `http://127.0.0.1:${port}`, cause: 'reset' });
    } finally {
      server.close();
    }
  });

  it('timeout (a shard that accepts and never answers)', async () => {
    const sockets = new Set<Socket>();
    const server = createNetServer((socket) => sockets.add(socket));
    const port = await listen(server);
    try {
      const line = await failureLine(`http://127.0.0.1:${port}`, new Agent({ headersTimeout: 100, keepAliveTimeout: 10 }));
      expect(line).toMatchObject({ ...common, origin: `http://127.0.0.1:${port}`, cause: 'timeout' });
    } finally {
      for (const socket of sockets) socket.destroy();
      server.close();
    }
  });

  it('tls', async () => {
    const server = createHttpServer((_req, res) => res.end('plain'));
    const port = await listen(server);
    try {
      expect(await failureLine(`https://127.0.0.1:${port}`)).toMatchObject({ ...common, origin: `https://127.0.0.1:${port}`, cause: 'tls' });
    } finally {
      server.close();
    }
  });

  it('dns', async () => {
    const notFound = (_host: string, _options: unknown, callback: (error: Error | null) => void) =>
      callback(Object.assign(new Error('getaddrinfo ENOTFOUND shard-7.example.invalid'), { code: 'ENOTFOUND' }));
    const dispatcher = new Agent({ keepAliveTimeout: 10, connect: { lookup: notFound as never } });
    expect(await failureLine('https://shard-7.example.invalid', dispatcher)).toMatchObject({ ...common, origin: 'https://shard-7.example.invalid', cause: 'dns' });
  });
});
