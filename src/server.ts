import { timingSafeEqual, createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApolloServer, HeaderMap, type ApolloServerPlugin } from '@apollo/server';
import { ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import { ApolloServerPluginDrainHttpServer } from '@apollo/server/plugin/drainHttpServer';
import { ApolloArmor } from '@escape.tech/graphql-armor';
import { createApp, type AppOverrides } from './app';
import type { Config } from './config';
import { wantsExplorer } from './browserRedirect';
import { createExplorer } from './explorer';
import { createContext, type ContextServices, type GraphQLContext } from './graphql/context';
import { demoTenantPlugin } from './graphql/demoTenant';
import { createErrorFormatter } from './graphql/errors';
import { createSubgraphSchema } from './graphql/schema';
import { createLogger, type Logger } from './logger';
import { createMetrics, type Metrics } from './metrics';
import { operationObserver } from './observability/operationPlugin';
import { runInRequestScope, setTraceIdProvider } from './observability/requestContext';
import { currentTraceId, flushTelemetry, startTelemetry, traceGraphQLRequest } from './telemetry';
import { operationSpanPlugin } from './telemetry/plugin';

export const GRAPHQL_PATH = '/graphql';
const MAX_BODY_BYTES = 1024 * 1024;
/**
 * The most upstream time one GraphQL request may use, all its pages together: below
 * the router's subgraph timeout (20 s in router/router.yaml), so a slow upstream
 * ends in our UPSTREAM_UNAVAILABLE error, not in the router's generic timeout.
 */
export const REQUEST_BUDGET_MS = 15_000;

export const EXAMPLE_QUERY = `# Locations, and the first shifts with where they happen.
query Rota {
  locations(first: 10) {
    nodes { id name }
  }
  shifts(first: 10) {
    edges {
      cursor
      node { id start end location { name } user { id } }
    }
    pageInfo { hasNextPage endCursor }
  }
}
`;

export interface ServerOptions extends AppOverrides {
  readonly logger?: Logger;
  /** Headers the explorer pre-fills (demo mode: the first demo tenant). */
  readonly explorerHeaders?: Record<string, string>;
  /** The OTEL_* variables to read (default: process.env); tests hand in their own. */
  readonly telemetryEnv?: Readonly<Record<string, string | undefined>>;
}

export interface RunningServer {
  /** The GraphQL endpoint, e.g. http://127.0.0.1:4001/graphql */
  readonly url: string;
  readonly port: number;
  readonly metrics: Metrics;
  readonly logger: Logger;
  close(): Promise<void>;
}

/** Starts the subgraph over HTTP: `/graphql`, `/health`, `/ready`, `/metrics` and the explorer at `/`. */
export async function startServer(config: Config, options: ServerOptions = {}): Promise<RunningServer> {
  const logger = options.logger ?? createLogger(config.logLevel);
  // Off unless OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_TRACES_EXPORTER is set; then OpenTelemetry loads here.
  // With tracing on, every log line written inside a span carries its trace id.
  if (await startTelemetry(options.telemetryEnv)) setTraceIdProvider(currentTraceId);
  const metrics = createMetrics();
  const app = createApp(config, logger, metrics, options);
  if (!(await app.connectSharedStore())) {
    logger.warn('WFS_REDIS_URL: Redis is not reachable yet; this replica uses its own tokens until it is');
  }
  const httpServer = createServer();
  const armor = new ApolloArmor({
    maxDepth: { n: 12 },
    maxAliases: { n: 30 },
    costLimit: { maxCost: 20_000 },
    maxTokens: { n: 5_000 },
    blockFieldSuggestion: { enabled: !config.explorer },
  }).protect();

  const apollo = new ApolloServer<GraphQLContext>({
    schema: createSubgraphSchema(options.extension),
    introspection: config.introspection,
    logger,
    ...armor,
    includeStacktraceInErrorResponses: false,
    formatError: createErrorFormatter((error) => logger.error({ err: error }, 'unexpected error in a resolver')),
    plugins: [
      ...armor.plugins,
      ApolloServerPluginLandingPageDisabled(),
      ApolloServerPluginDrainHttpServer({ httpServer }),
      itemErrors(),
      operationObserver(metrics, logger, app.upstream),
      ...(options.defaultTenant ? [demoTenantPlugin({ tenantHeader: config.tenantHeader, defaultTenant: options.defaultTenant })] : []),
      operationSpanPlugin(),
    ],
  });
  await apollo.start();

  if (config.explorer && !config.introspection) {
    logger.warn('the explorer is on but introspection is off (WFS_INTROSPECTION): it will show no schema docs and no completion');
  }
  let draining = false;
  const explorer = config.explorer
    ? createExplorer({ graphqlPath: GRAPHQL_PATH, defaultQuery: EXAMPLE_QUERY, defaultHeaders: options.explorerHeaders ?? {} })
    : undefined;
  const routerSecret = config.routerSecret ? createHash('sha256').update(config.routerSecret).digest() : null;

  httpServer.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/health') return sendJson(res, 200, { status: 'ok' });
    if (req.method === 'GET' && path === '/ready') {
      // A Redis outage does not make us unready: tokens then stay per replica.
      metrics.ready.set(draining ? 0 : 1);
      void app.sharedStoreUp().then((redis) =>
        sendJson(res, draining ? 503 : 200, { status: draining ? 'shutting down' : 'ready', ...(redis !== null && { sharedTokenStore: redis ? 'up' : 'down' }) }),
      );
      return;
    }
    if (req.method === 'GET' && path === '/metrics') {
      void metrics.registry.metrics().then((text) => {
        res.writeHead(200, { 'content-type': metrics.registry.contentType });
        res.end(text);
      });
      return;
    }
    if (path === GRAPHQL_PATH) {
      if (explorer && wantsExplorer(req)) return void res.writeHead(302, { location: '/' }).end();
      if (routerSecret && !sameSecret(req.headers['router-authorization'], routerSecret)) {
        metrics.graphqlErrors.inc({ code: 'UNAUTHENTICATED' });
        return sendJson(res, 401, { errors: [{ message: 'this subgraph only answers the router: the router-authorization header is missing or wrong', extensions: { code: 'UNAUTHENTICATED' } }] });
      }
      // Everything the request causes runs in its scope: request id on every log line, abort accounting, in-flight gauge.
      metrics.graphqlInFlight.inc();
      runInRequestScope(req, res, { metrics, onEnd: () => metrics.graphqlInFlight.dec() }, () =>
        traceGraphQLRequest(req.headers, () => handleGraphQL(apollo, app.services, req, res)).catch((error: unknown) => {
          logger.error({ err: error }, 'GraphQL request failed');
          if (!res.headersSent) sendJson(res, 500, { errors: [{ message: 'Internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR' } }] });
          else res.destroy();
        }),
      );
      return;
    }
    if (explorer?.(req, res)) return;
    const hint = path === '/' && !explorer ? ' (the explorer is off: set WFS_EXPLORER=true to serve it here)' : '';
    sendJson(res, 404, { error: `no route for ${req.method} ${path}; the GraphQL endpoint is ${GRAPHQL_PATH}${hint}` });
  });

  httpServer.headersTimeout = 10_000;
  httpServer.requestTimeout = 60_000;
  httpServer.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(config.port, config.host, () => {
      httpServer.off('error', reject);
      resolve();
    });
  });
  const port = (httpServer.address() as AddressInfo).port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;

  return {
    url: `http://${host === '0.0.0.0' || host === '[::]' ? 'localhost' : host}:${port}${GRAPHQL_PATH}`,
    port,
    metrics,
    logger,
    async close() {
      draining = true;
      metrics.ready.set(0);
      await apollo.stop();
      await app.close();
      await flushTelemetry();
    },
  };
}

function sameSecret(header: string | string[] | undefined, expectedDigest: Buffer): boolean {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return false;
  return timingSafeEqual(createHash('sha256').update(value).digest(), expectedDigest);
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) return null;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Apollo Server's documented integration path: hand it the request, stream back its response. */
async function handleGraphQL(apollo: ApolloServer<GraphQLContext>, services: ContextServices, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const abort = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) abort.abort();
  });
  const headers = new HeaderMap();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  let body: unknown;
  if (req.method === 'POST') {
    const text = await readBody(req);
    if (text === null) return sendJson(res, 413, { errors: [{ message: `request body larger than ${MAX_BODY_BYTES} bytes`, extensions: { code: 'BAD_REQUEST' } }] });
    if ((headers.get('content-type') ?? '').includes('application/json')) {
      try {
        body = text === '' ? {} : JSON.parse(text);
      } catch {
        return sendJson(res, 400, { errors: [{ message: 'the request body is not valid JSON', extensions: { code: 'BAD_REQUEST' } }] });
      }
    } else body = text;
  }
  const response = await apollo.executeHTTPGraphQLRequest({
    httpGraphQLRequest: { method: req.method ?? 'GET', headers, search: new URL(req.url ?? '/', 'http://localhost').search, body },
    context: async () => createContext(services, req.headers, AbortSignal.any([abort.signal, AbortSignal.timeout(REQUEST_BUDGET_MS)])),
  });
  for (const [name, value] of response.headers) res.setHeader(name, value);
  res.statusCode = response.status ?? 200;
  if (response.body.kind === 'complete') {
    res.end(response.body.string);
    return;
  }
  for await (const chunk of response.body.asyncIterator) res.write(chunk);
  res.end();
}

/**
 * Appends the per-item errors collected during execution (malformed records that
 * were skipped); operationObserver, after it, counts them with the rest.
 */
function itemErrors(): ApolloServerPlugin<GraphQLContext> {
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ response, contextValue }) {
          if (response.body.kind !== 'single') return;
          const result = response.body.singleResult;
          if (contextValue.itemErrors.length > 0) {
            result.errors = [...(result.errors ?? []), ...contextValue.itemErrors.map((error) => error.toJSON())];
          }
        },
      };
    },
  };
}
