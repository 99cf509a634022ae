import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { createGatewayRuntime, getGraphQLWSOptions } from '@graphql-hive/gateway';
import { useServer } from 'graphql-ws/use/ws';
import { request } from 'undici';
import { WebSocketServer } from 'ws';
import type { ResponseStore } from '../../router/responseStore';

/**
 * Hive Gateway as the test line runs it: `@graphql-hive/gateway` with the committed
 * `supergraph.graphql` and the committed `router/gateway.config.ts` (only the subgraph
 * locations and the secret come from the test), over real HTTP on loopback.
 */

const repoRoot = path.resolve(__dirname, '../..');
export const HIVE_ROUTER_SECRET = 'router-secret-for-the-hive-gateway-test-0123456789';

// The config file also builds the CLI's `gatewayConfig` from process.env at load, and
// refuses to without the secret, as the router does; the tests build their own from
// createGatewayConfig.
process.env['WFS_ROUTER_SECRET'] ??= HIVE_ROUTER_SECRET;
const { createGatewayConfig } = require('../../router/gateway.config') as typeof import('../../router/gateway.config');

// The response cache's CommonJS build (@graphql-mesh/plugin-response-cache, which jest
// loads) calls `require('cache-control-parser').default.parse`, and that module's
// CommonJS build has no `default`: every subgraph answer carrying Cache-Control would
// fail there ("Cannot read properties of undefined (reading 'parse')"). The `hive-gateway`
// CLI loads the ESM builds, where the default import is the module; so does this.
const cacheControlParser = require('cache-control-parser') as { default?: unknown };
cacheControlParser.default ??= cacheControlParser;

export interface GatewayResult {
  data?: Record<string, any> | null;
  errors?: Array<{ message: string; path?: Array<string | number>; extensions?: { code?: string } }>;
}

export interface RunningGateway {
  /** The gateway's GraphQL endpoint (HTTP; the same path serves graphql-ws). */
  readonly url: string;
  query(query: string, headers: Record<string, string>): Promise<GatewayResult>;
  /** The config's cache (router/responseStore.ts), where the response cache keeps its answers. */
  readonly cache: ResponseStore;
  /** What the cache logged (its warnings about answers evicted unread). */
  readonly cacheLog: readonly string[];
  close(): Promise<void>;
}

/**
 * @envelop/response-cache warns on console that `ttlPerType` is deprecated whenever it
 * is given one, and Hive's `responseCaching` always gives one (an empty object): the
 * warning comes with every gateway that caches, whatever its config. Only that line is
 * kept off the console (the tests fail on any other), while the runtime is built.
 */
function quietResponseCacheInit<T>(build: () => T): T {
  const warn = console.warn;
  console.warn = (...args: unknown[]) => {
    if (typeof args[0] === 'string' && args[0].startsWith('[useResponseCache] `ttlForType` is deprecated')) return;
    warn(...args);
  };
  try {
    return build();
  } finally {
    console.warn = warn;
  }
}

/** A port the gateway will serve on, taken before it starts (its callback URL must be known to the subgraph first). */
export interface GatewayPort {
  readonly server: Server;
  /** `http://127.0.0.1:port`. */
  readonly origin: string;
}

/** Listens on loopback `port` (any free one when 0) for a gateway started later (startHiveGateway's `port`). */
export async function gatewayPort(port = 0): Promise<GatewayPort> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/**
 * `env`: more of the config's variables (WFS_CACHE_INVALIDATION_KEY, WFS_TENANT_HEADER,
 * HIVE_RESPONSE_CACHE_MAX_KEYS; SUBGRAPH_WFS_SUBSCRIPTIONS, and with `callback`
 * GATEWAY_CALLBACK_URL defaults to the port's `/callback`); `port`: where to listen (a
 * free port a subgraph was told to send its invalidations or callbacks to, or one taken
 * with gatewayPort), any when 0.
 */
export async function startHiveGateway(urls: { wfs: string; people: string }, routerSecret: string, env: Record<string, string> = {}, port: number | GatewayPort = 0): Promise<RunningGateway> {
  const supergraph = path.join(repoRoot, 'supergraph.graphql');
  const listening = typeof port === 'number' ? await gatewayPort(port) : port;
  if (env['SUBGRAPH_WFS_SUBSCRIPTIONS'] === 'callback') env = { GATEWAY_CALLBACK_URL: `${listening.origin}/callback`, ...env };
  // The CLI's config type is the runtime's plus CLI-only options (none used here).
  const config = createGatewayConfig({ ...env, WFS_ROUTER_SECRET: routerSecret, SUPERGRAPH_PATH: supergraph, SUBGRAPH_WFS_URL: urls.wfs, SUBGRAPH_PEOPLE_URL: urls.people });
  // The config's cache, built as the `hive-gateway` CLI builds a config's cache factory
  // (its getCacheInstanceFromConfig), with a log the tests read.
  const cacheLog: string[] = [];
  const log = { warn: (...args: unknown[]) => void cacheLog.push(args.map(String).join(' ')) };
  const cache = (config.cache as (ctx: { log: typeof log }) => ResponseStore)({ log });
  const gateway = quietResponseCacheInit(() => createGatewayRuntime({ ...config, cache, supergraph, logging: false } as Parameters<typeof createGatewayRuntime>[0]));
  const server: Server = listening.server;
  server.on('request', gateway);
  server.keepAliveTimeout = 500;
  // Clients' WebSockets, as the `hive-gateway` CLI serves them (its startNodeHttpServer,
  // on unless --disable-websockets): graphql-ws at the GraphQL path, the upgrade request
  // as the request and its connectionParams merged into the headers the config reads.
  const wsServer = new WebSocketServer({ path: gateway.graphqlEndpoint, server });
  const asRequest = (incoming: IncomingMessage) =>
    new gateway.fetchAPI.Request(`http://127.0.0.1${incoming.url ?? '/'}`, {
      headers: Object.entries(incoming.headers).flatMap(([name, value]) => (value === undefined ? [] : [[name, Array.isArray(value) ? value.join(', ') : value] as [string, string]])),
    });
  const webSockets = useServer(
    getGraphQLWSOptions(gateway, (ctx) => {
      const extra = ctx.extra as { request: IncomingMessage; socket: unknown };
      return { req: extra.request, socket: extra.socket, request: asRequest(extra.request) };
    }) as Parameters<typeof useServer>[0],
    wsServer,
  );
  const url = `${listening.origin}${gateway.graphqlEndpoint}`;
  return {
    url,
    cache,
    cacheLog,
    async query(query, headers) {
      const response = await request(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', ...headers }, body: JSON.stringify({ query }) });
      return (await response.body.json()) as GatewayResult;
    },
    async close() {
      for (const client of wsServer.clients) client.terminate();
      await webSockets.dispose();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await gateway.dispose();
    },
  };
}
