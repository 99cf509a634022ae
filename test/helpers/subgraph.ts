import { Writable } from 'node:stream';
import type { Counter, Gauge } from 'prom-client';
import { request } from 'undici';
import { loadConfig } from '../../src/config';
import { startEmulator, type Emulator, type EmulatorOptions, type ListCounts } from '../../tools/emulator';
import { createLogger } from '../../src/observability/logger';
import { startServer, type RunningServer, type ServerOptions } from '../../src/server';
import { CHECKING } from '../../src/upstream/token/tokenEndpointCheck';
import type { ForeignUpstream } from './foreignUpstream';
import { errorCodes, postGraphQL, writeTenantsFile, type GraphQLResponse } from './postGraphQL';
import { counterTotal, waitFor } from './waitFor';

export { errorCodes, postGraphQL, writeTenantsFile, type GraphQLResponse };

export interface TestSubgraph {
  emulator: Emulator;
  server: RunningServer;
  /** Every log line the server wrote, as text (tests check secrets never appear). */
  logs: string[];
  query<T = any>(query: string, variables?: Record<string, unknown>, headers?: Record<string, string>): Promise<GraphQLResponse<T>>;
  close(): Promise<void>;
}

/** How many live polls `server` has finished with `outcome` (`wfs_live_polls_total`). */
export function livePolls(server: Pick<RunningServer, 'metrics'>, outcome = 'ok'): Promise<number> {
  return counterTotal(server.metrics.registry.getSingleMetric('wfs_live_polls_total') as Counter<string>, { outcome });
}

/** The pollers `server` leads now (`wfs_live_pollers_leading`): with Redis, one replica of the fleet leads each. */
export async function livePollersLeading(server: Pick<RunningServer, 'metrics'>): Promise<number> {
  return (await (server.metrics.registry.getSingleMetric('wfs_live_pollers_leading') as Gauge).get()).values[0]?.value ?? 0;
}

/**
 * Resolves once `server` holds one live subscription and has finished a poll after the
 * first `since` (a count `livePolls` read before subscribing): the poll that read the
 * baseline a later change is compared with.
 */
export async function subscribedAndPolled(server: Pick<RunningServer, 'metrics' | 'live'>, since: number): Promise<void> {
  await waitFor(() => server.live.subscriptions === 1, 'the subscription on the subgraph');
  await waitFor(async () => (await livePolls(server)) > since, 'the baseline poll');
}

/** The lists called at least once, with their counts: `{}` when no upstream list was called, whatever the registry holds. */
export function listsCalled(counts: ListCounts): Record<string, number> {
  return Object.fromEntries(Object.entries(counts).filter(([, calls]) => calls > 0));
}

/**
 * The environment of a subgraph in front of a foreign upstream (test/helpers/foreignUpstream.ts),
 * as a deployment sets it: the upstream's auth URL (under its path prefix) and a tenants file
 * with every tenant it has, plus `extra` (a cursor secret, a log level...).
 */
export function foreignUpstreamEnv(up: Pick<ForeignUpstream, 'authUrl' | 'tenants'>, extra: Record<string, string> = {}): Record<string, string> {
  const tenants = [...up.tenants.values()].map((t) => ({ tenantId: t.tenantId, clientId: t.clientId, clientSecret: t.clientSecret, grantedScopes: t.scope.split(' ') }));
  return { PORT: '0', HOST: '127.0.0.1', WFS_AUTH_URL: up.authUrl, WFS_TENANTS_FILE: writeTenantsFile(tenants), ...extra };
}

/** The cursor secret of the subgraphs started here (their cache tags' company HMAC derives from it). */
export const TEST_CURSOR_SECRET = 'test-cursor-secret-0123456789abcdef';

/**
 * The real thing over real HTTP on loopback: the emulator, and the subgraph configured
 * through the same environment variables a deployment uses.
 */
export async function startTestSubgraph(
  emulatorOptions: EmulatorOptions = {},
  env: Record<string, string> = {},
  serverOptions: ServerOptions = {},
  existingEmulator?: Emulator,
): Promise<TestSubgraph> {
  const emulator = existingEmulator ?? (await startEmulator(emulatorOptions));
  try {
    return await startWith(emulator, env, serverOptions, existingEmulator === undefined);
  } catch (error) {
    if (!existingEmulator) await emulator.close();
    throw error;
  }
}

async function startWith(emulator: Emulator, env: Record<string, string>, serverOptions: ServerOptions, ownsEmulator: boolean): Promise<TestSubgraph> {
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    WFS_AUTH_URL: emulator.authUrl,
    WFS_TENANTS_FILE: writeTenantsFile(emulator.tenants),
    WFS_CURSOR_SECRET: TEST_CURSOR_SECRET,
    LOG_LEVEL: 'debug',
    ...env,
  });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, callback) {
      logs.push(String(chunk));
      callback();
    },
  });
  const server = await startServer(config, { logger: createLogger(config.logLevel, sink), ...serverOptions });
  // The server listens before its start-up check of the token endpoint has an answer;
  // tests start from a settled server, so the check's log line never lands inside them.
  await waitFor(async () => {
    const response = await request(`${new URL(server.url).origin}/ready`);
    const body = (await response.body.json()) as { reason?: string };
    return body.reason !== CHECKING;
  }, 'the start-up check of the token endpoint');
  let closed: Promise<void> | undefined;
  return {
    emulator,
    server,
    logs,
    query: (query, variables, headers = {}) => postGraphQL(server.url, { query, variables }, headers),
    close() {
      closed ??= (async () => {
        await server.close();
        if (ownsEmulator) await emulator.close();
      })();
      return closed;
    },
  };
}
