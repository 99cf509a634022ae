import { createServer, type Server } from 'node:http';
import type { ApolloServerPlugin } from '@apollo/server';
import type { GraphQLSchema } from 'graphql';
import type { AddressInfo } from 'node:net';
import { createApp, type App, type AppOverrides } from './app';
import { getHeapStatistics } from 'node:v8';
import { ConfigError, settingOfBound, withLimits, type Config, type LimitOverrides, type Limits } from './config';
import { DOCUMENT_STORE_BYTES, PERSISTED_QUERY_BYTES } from './graphql/server/documentStore';
import { EXAMPLE_QUERY } from './exampleQuery';
import { createExplorer } from './explorer';
import type { RefusalReason } from './graphql/admission/refusals';
import { createRouterGate, type RouterGate } from './graphql/admission/routerGate';
import { createErrorFormatter } from './graphql/errors';
import { createApolloServer } from './graphql/server/apolloServer';
import { createSubgraphSchema } from './graphql/server/schema';
import type { GraphQLContext } from './graphql/data/context';
import { createGraphQLHandler } from './http/graphqlHandler';
import { createLiveCallbacks, type LiveCallbacks } from './http/liveCallback';
import { createLiveHttp, type LiveHttp } from './http/liveHttp';
import { attachLiveSocket, type LiveSocket } from './http/liveSocket';
import { boundConnections, boundedServerOptions } from './http/connectionBounds';
import { boundRequests } from './http/requestBounds';
import { createRoutes, DRAINING_REASON } from './http/routes';
import { createLive, type Live, type LiveHub, type LiveOptions } from './live';
import type { LiveEvents } from './live/metrics';
import { SharedRequests } from './http/sharedRequests';
import { demoTenantPlugin } from './graphql/server/demoTenant';
import type { DemoDefault } from './graphql/admission/identity';
import { createCache, type Cache } from './cache';
import { UNIT_BYTES } from './memory/budget';
import { createSubscribeGate, type LiveTransport } from './graphql/admission/subscribeGate';
import { createObservability, type Observability } from './observability';
import { accountSummary, fitToHeap, type Fitting } from './memory/account';
import { createLogger, type Logger } from './observability/logger';
import { createMetrics, registerHeldUnits, type Metrics } from './observability/metrics';
import { redisDropLog } from './observability/redisDrops';
import { tokenUrl } from './upstream/token/tokenEndpoint';

export { EXAMPLE_QUERY } from './exampleQuery';

export const GRAPHQL_PATH = '/graphql';

export interface ServerOptions extends AppOverrides {
  readonly logger?: Logger;
  /** Headers the explorer pre-fills (demo mode: the first demo tenant). */
  readonly explorerHeaders?: Record<string, string>;
  /** Where the explorer's built assets are (default dist/explorer/assets/, which `npm run build` writes; test/helpers/explorerAssets.ts builds it when missing). */
  readonly explorerAssetsDir?: string;
  /** The OTEL_* variables to read (default: process.env); tests hand in their own. */
  readonly telemetryEnv?: Readonly<Record<string, string | undefined>>;
  /** Apollo Server plugins that run after the subgraph's own (tests observe requests with them). */
  readonly plugins?: ReadonlyArray<ApolloServerPlugin<GraphQLContext>>;
  /** Bounds in place of the configuration's (`config.limits`), group by group (tests lower them); config/limits.ts's `Limits` says each one. */
  readonly limits?: LimitOverrides;
  /** The heap limit the memory account is set against, in bytes (default: V8's `heap_size_limit` in force). */
  readonly heapLimitBytes?: number;
  /** Executions by graphql-js before an operation is compiled (default graphql/server/execution.ts's COMPILE_AFTER; tests compile at once with 0). */
  readonly compileAfter?: number;
  /** Live updates' poll interval, Redis prefix and lease (tests shorten them); see live/index.ts. */
  readonly live?: LiveOptions;
}

export interface RunningServer {
  /** The GraphQL endpoint, e.g. http://127.0.0.1:4001/graphql */
  readonly url: string;
  readonly port: number;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** The memory account the bounds were fitted to at start (memory/account.ts). */
  readonly memory: Fitting;
  /** What `/ready` would answer 503 with now, or undefined when it answers 200. */
  readinessProblem(): string | undefined;
  /** The live-update hub (its subscriptions and pollers). */
  readonly live: LiveHub;
  /**
   * Starts the drain before `close()`: `/ready` answers 503 (`draining`) so balancers
   * move away, and every answer carries `Connection: close` so kept-alive connections
   * end after their next answer; requests and WebSocket upgrades are still served.
   */
  drain(): void;
  /** Stops: WebSocket connections closed (1001), no new connections, requests in flight finished. */
  close(): Promise<void>;
}

/**
 * Starts the subgraph over HTTP: `/graphql`, `/health`, `/ready`, `/metrics` and the
 * explorer at `/`. Wiring only: the routes live in `http/routes.ts`, the request path
 * in `http/requestBounds.ts` around `http/graphqlHandler.ts`, Apollo Server's set-up in `graphql/server/apolloServer.ts`.
 */
export async function startServer(config: Config, options: ServerOptions = {}): Promise<RunningServer> {
  const logger = options.logger ?? createLogger(config.logLevel);
  // Every bound, each room given its group (config/limits.ts, `Limits`), fitted to the
  // heap before anything is started: refused (a ConfigError) or scaled down if their
  // worst case does not fit (memory/account.ts).
  const memory = fitBounds(withLimits(config.limits, options.limits), config, options);
  const limits = memory.limits;
  const metrics = createMetrics();
  // Tracing is off unless OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_TRACES_EXPORTER is set; then OpenTelemetry loads here.
  const observability = await createObservability({
    logger,
    metrics,
    ...(config.authUrl && { tokenUrl: tokenUrl(config.authUrl) }),
    ...(options.telemetryEnv && { telemetryEnv: options.telemetryEnv }),
  });
  const app = createApp(config, logger, metrics, observability.observer, options);
  // Connections, their headers' time and the router secret are bounded before any request is served (http/connectionBounds.ts).
  const httpServer = createServer(boundedServerOptions());
  const router = createRouterGate(config.routerSecret ?? null);
  boundConnections(httpServer, {
    ...limits.connection,
    router,
    refused: (reason) => observability.observer.refused(reason),
  });
  const sharing = new SharedRequests(observability.observer);
  const cache = cacheOf(config, options, app, observability, metrics);
  const whole = cache.whole;
  // The schema copy Apollo Server never instruments, built when first needed: by a
  // compiled query (graphql/server/execution.ts) or a subscription, not at start-up.
  let uninstrumented: GraphQLSchema | undefined;
  const executionSchema = (): GraphQLSchema => (uninstrumented ??= createSubgraphSchema());
  const apollo = createApollo({ config, options, observability, httpServer, limits, sharing, cache, executionSchema, logger });
  // Redis (when configured) connects while Apollo Server starts, not after it. The token
  // endpoint check runs on its own: /ready says "checking" until its first answer, and the
  // first query does not wait for it (it asks the endpoint for a token anyway).
  const [sharedStoreConnected] = await Promise.all([app.connectSharedStore(), apollo.start()]);
  warnAtStart(config, logger, sharedStoreConnected);

  const live = startLive({ config, options, app, observability, cache, limits, logger });
  registerHeldUnits(metrics, () => app.memoryBudget.held);
  const { liveSocket, liveHttp, callbacks } = serveLive({ httpServer, router, config, options, services: app.services, hub: live.hub, schema: executionSchema, limits, logger, metrics, events: observability.observer, onQueuedBytes: (held) => metrics.liveQueuedMessageBytes.set(held) });

  let draining = false;
  httpServer.on(
    'request',
    createRoutes({
      graphqlPath: GRAPHQL_PATH,
      // The request bounds (http/requestBounds.ts) around the thin GraphQL handler.
      graphql: boundRequests(
        {
          limits: limits.request,
          onBodyBytes: (held) => metrics.requestBodyBytes.set(held),
          onRefused: (reason) => observability.observer.refused(reason),
        },
        createGraphQLHandler({ apollo, services: app.services, policy: cache.policy, sharing, live: liveHttp, ...(whole && { whole, answeredWhole: observability.answeredWhole }) }),
      ),
      metrics,
      logger,
      serve: observability.serve,
      router,
      events: observability.observer,
      sharedStoreUp: () => app.sharedStoreUp(),
      readinessProblem: () => app.readinessProblem(),
      draining: () => draining,
      explorer: config.explorer ? explorerOf(options) : undefined,
    }),
  );

  const { url, port } = await listen(httpServer, config);
  const drain = () => {
    draining = true;
    metrics.ready.set(0);
  };
  return {
    url,
    port,
    metrics,
    logger,
    memory,
    readinessProblem: () => (draining ? DRAINING_REASON : app.readinessProblem()),
    live: live.hub,
    drain,
    async close() {
      drain();
      // WebSocket connections are no longer the HTTP server's once upgraded: closed first.
      await liveSocket.close();
      await callbacks.close();
      await live.close();
      cache.close();
      await apollo.stop();
      await app.close();
      await observability.close();
      metrics.close();
    },
  };
}

/** Apollo Server on the HTTP server: its limits, and its plugins in their order (cache policy, shared requests, observability, demo tenant, the caller's). */
function createApollo(parts: {
  config: Config;
  options: ServerOptions;
  observability: Observability;
  httpServer: Server;
  limits: Limits;
  sharing: SharedRequests;
  cache: Cache;
  executionSchema: () => GraphQLSchema;
  logger: Logger;
}): ReturnType<typeof createApolloServer> {
  const { config, options, observability, httpServer, limits, sharing, cache, executionSchema, logger } = parts;
  const demo = demoOf(config, options);
  return createApolloServer({
    executionSchema,
    ...(options.compileAfter !== undefined && { compileAfter: options.compileAfter }),
    logger,
    httpServer,
    hideSchemaDetails: !config.explorer,
    introspection: config.introspection,
    limits: limits.query,
    refused: (reason) => observability.observer.refused(reason),
    stringifyResult: sharing.stringify,
    // Order matters: the operation observer counts the item errors appended before it;
    // the cache policy decides before the shared-requests plugin hands its decision to joiners.
    plugins: [
      cache.policy.plugin(),
      sharing.plugin(),
      ...(observability.plugins as ReadonlyArray<ApolloServerPlugin<GraphQLContext>>),
      ...(demo ? [demoTenantPlugin(demo)] : []),
      ...(options.plugins ?? []),
    ],
  });
}

/** Live updates (live/index.ts): one poller per company and list over the reading side queries use; a change it sees or hears goes to the cache. */
function startLive(parts: { config: Config; options: ServerOptions; app: App; observability: Observability; cache: Cache; limits: Limits; logger: Logger }): Live {
  const { config, options, app, observability, cache, limits, logger } = parts;
  const dropLog = redisDropLog(logger);
  return createLive({
    onChanged: (tenantId, list, polled) => cache.changed(tenantId, list, polled),
    config,
    reading: app.services,
    memory: app.memoryBudget,
    events: observability.observer,
    redis: app.redis,
    onRedisDown: (error) => logger.warn({ err: error.message }, 'live updates: Redis does not answer; this replica polls for its own subscribers until it does'),
    onRedisUp: () => logger.info('live updates: Redis is back; sharing polls with the other replicas again'),
    onRedisDropped: (reason, key) => dropLog.liveDropped(reason, key),
    limits,
    ...(options.live && { options: options.live }),
  });
}

/** Demo mode's default tenant as every room that honours its exception is handed it (identity.ts, `answeredByDefault`). */
function demoOf(config: Config, options: ServerOptions): DemoDefault | undefined {
  return options.defaultTenant ? { tenantHeader: config.tenantHeader, defaultTenant: options.defaultTenant } : undefined;
}

function warnAtStart(config: Config, logger: Logger, sharedStoreConnected: boolean): void {
  if (!sharedStoreConnected) {
    logger.warn('WFS_REDIS_URL: Redis is not reachable yet; this replica uses its own tokens until it is');
  }
  if (config.explorer && !config.introspection) {
    logger.warn('the explorer is on but introspection is off (WFS_INTROSPECTION): it will show no schema docs and no completion');
  }
}

function explorerOf(options: ServerOptions): ReturnType<typeof createExplorer> {
  return createExplorer({
    graphqlPath: GRAPHQL_PATH,
    defaultQuery: EXAMPLE_QUERY,
    defaultHeaders: options.explorerHeaders ?? {},
    ...(options.explorerAssetsDir && { assetsDir: options.explorerAssetsDir }),
  });
}

/** Listens on the configured address (the connections' bounds are set in http/connectionBounds.ts); the GraphQL URL and the port it got. */
async function listen(httpServer: Server, config: Config): Promise<{ url: string; port: number }> {
  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(config.port, config.host, () => {
      httpServer.off('error', reject);
      resolve();
    });
  });
  const port = (httpServer.address() as AddressInfo).port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  return { url: `http://${host === '0.0.0.0' || host === '[::]' ? 'localhost' : host}:${port}${GRAPHQL_PATH}`, port };
}

/** The cache as one room (cache/index.ts): its policy, its store of answers kept whole, its invalidation. */
function cacheOf(config: Config, options: ServerOptions, app: App, observability: Observability, metrics: Metrics): Cache {
  return createCache({
    config,
    demo: demoOf(config, options),
    identify: app.services.identify,
    indexes: app.services.indexes,
    budget: app.memoryBudget,
    resources: app.services.resources,
    observer: observability.observer,
    onInvalidation: (outcome) => metrics.cacheInvalidations.inc({ outcome }),
  });
}

/**
 * The bounds fitted to the heap (memory/account.ts): kept if every bound filled at once
 * fits what the heap leaves clients, scaled down together if they are all defaults (a
 * heap smaller than the shipped one; main.ts says so at start), refused otherwise.
 */
function fitBounds(limits: Limits, config: Config, options: ServerOptions): Fitting & { readonly limits: Limits } {
  const reserve = { entityIndexBytes: config.entityIndexMaxRecords * UNIT_BYTES, documentBytes: DOCUMENT_STORE_BYTES + PERSISTED_QUERY_BYTES };
  const fitting = fitToHeap(limits, options.heapLimitBytes ?? getHeapStatistics().heap_size_limit, reserve);
  if (fitting.kind !== 'refused') return fitting;
  const { worstCaseMiB, budgetMiB, heapLimitMiB } = accountSummary(fitting.account);
  const set = fitting.boundsSet.map((name) => settingOfBound(name) ?? name);
  throw new ConfigError(
    set[0] ?? '--max-old-space-size',
    `every bound filled at once may hold ${worstCaseMiB} MiB, over the ${budgetMiB} MiB a heap of ${heapLimitMiB} MiB leaves what clients fill (bounds set: ${set.join(', ') || 'none'}); lower them, or start node with a larger --max-old-space-size (docs/limits.md, "The memory account")`,
  );
}

/**
 * Live updates' transports, one subscribe gate (graphql/admission/subscribeGate.ts) for
 * all: graphql-ws (http/liveSocket.ts, the gate as its hooks) on the HTTP server, and
 * SSE, multipart and Apollo's callback protocol on `POST /graphql` (http/liveHttp.ts,
 * http/liveCallback.ts).
 */
function serveLive(parts: {
  httpServer: Server;
  router: RouterGate;
  config: Config;
  options: ServerOptions;
  services: App['services'];
  hub: LiveHub;
  schema: () => GraphQLSchema;
  limits: Limits;
  logger: Logger;
  metrics: Metrics;
  /** Where refusals and slow consumers are counted (the Observer port). */
  events: Pick<LiveEvents, 'refused' | 'liveSlowConsumerDropped'>;
  /** Told the bytes the connections' messages hold (the `wfs_live_queued_message_bytes` gauge). */
  onQueuedBytes: (held: number) => void;
}): { liveSocket: LiveSocket; liveHttp: LiveHttp; callbacks: LiveCallbacks } {
  const { httpServer, config, options, services, hub, logger, events } = parts;
  const refused = (reason: RefusalReason, transport?: LiveTransport) => events.refused(reason, transport);
  const slowConsumerDropped = () => events.liveSlowConsumerDropped();
  const gate = createSubscribeGate({
    schema: parts.schema,
    services,
    hub,
    queryLimits: parts.limits.query,
    budgetMs: parts.limits.request.budgetMs,
    formatError: createErrorFormatter((error) => logger.error({ err: error }, 'unexpected error in a subscription resolver')),
    refused,
    limits: parts.limits.gate,
    demo: demoOf(config, options),
    tenantHeader: config.tenantHeader,
    opened: (transport, delta) => parts.metrics.live.transportSubscriptions.inc({ transport }, delta),
  });
  const liveSocket = attachLiveSocket({ httpServer, path: GRAPHQL_PATH, protocol: gate, router: parts.router, refused, slowConsumerDropped, onQueuedBytes: parts.onQueuedBytes, logger, limits: parts.limits.socket });
  const callbacks = createLiveCallbacks({ gate, allow: config.subscriptionCallbackAllow, limits: parts.limits.live, refused, logger });
  const { keepAliveMs, bufferedBytes, bufferedBytesPerReplica } = parts.limits.socket;
  const socketsBuffered = () => liveSocket.buffered();
  const liveHttp = createLiveHttp({ gate, heartbeatMs: keepAliveMs, bufferedBytes, bufferedBytesPerReplica, socketsBuffered, maxTokens: parts.limits.query.maxTokens, slowConsumerDropped, callbacks, logger });
  return { liveSocket, liveHttp, callbacks };
}
