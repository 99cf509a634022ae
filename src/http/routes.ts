import type { IncomingMessage, ServerResponse } from 'node:http';
import { wantsExplorer } from '../browserRedirect';
import type { RefusalEvents } from '../graphql/admission/refusals';
import type { RouterGate } from '../graphql/admission/routerGate';
import type { Observability } from '../observability';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import { ClientAbortedError, type GraphQLHandler } from './requestBounds';
import { sendGraphQLError, sendJson, sendRefusal } from './respond';

/** What `/ready` says while the replica drains (src/main.ts, WFS_DRAIN_SECONDS). */
export const DRAINING_REASON = 'shutting down: this replica still serves what reaches it, closing each connection after its answer, until it stops accepting connections';

export interface RoutesOptions {
  readonly graphqlPath: string;
  readonly graphql: GraphQLHandler;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** Runs a GraphQL request inside its observed scope (record, in-flight gauge, span). */
  readonly serve: Observability['serve'];
  /** The router-secret decision (graphql/admission/routerGate.ts), the upgrade's too: with a secret set, requests to the GraphQL path must carry it. */
  readonly router: RouterGate;
  /** Where a refusal is counted (the Observer port's `refused`). */
  readonly events: RefusalEvents;
  /** Whether the shared token store answers (null without one). */
  readonly sharedStoreUp: () => Promise<boolean | null>;
  /** What keeps the replica from serving (a token endpoint that does not answer like one), or undefined. */
  readonly readinessProblem?: () => string | undefined;
  /** True once the replica drains (SIGTERM): `/ready` answers 503 and every answer closes its connection. */
  readonly draining: () => boolean;
  /** Serves `/` and its assets; false for anything else. Undefined: the explorer is off. */
  readonly explorer?: (req: IncomingMessage, res: ServerResponse) => boolean;
}

/**
 * The HTTP routes: `/health`, `/ready`, `/metrics`, the GraphQL path behind the
 * router gate, and the explorer. One listener for node:http's `request` event.
 */
export function createRoutes(options: RoutesOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const { graphqlPath, graphql, metrics, logger } = options;
  const { router } = options;

  // What /ready answers, kept in wfs_ready at each look.
  const readiness = (): { draining: boolean; problem: string | undefined } => {
    const draining = options.draining();
    const problem = draining ? undefined : options.readinessProblem?.();
    metrics.ready.set(draining || problem ? 0 : 1);
    return { draining, problem };
  };

  return (req, res) => {
    // Draining: a balancer that keeps connections open would go on sending on them after
    // it saw /ready fail; closing each after its answer makes its next request a new
    // connection, which the balancer sends to a replica that is ready.
    if (options.draining()) res.setHeader('connection', 'close');
    const url = req.url ?? '/';
    const query = url.indexOf('?');
    const path = query === -1 ? url : url.slice(0, query);
    if (path === graphqlPath) {
      // A browser opening the endpoint gets the explorer, not a CSRF error.
      if (options.explorer && wantsExplorer(req)) return void res.writeHead(302, { location: '/' }).end();
      const verdict = router.verdict(req.headers);
      if (verdict === 'refused') {
        metrics.graphqlErrors.inc({ code: 'UNAUTHENTICATED' });
        options.events.refused('query_router_secret');
        return sendRefusal(res, 'query_router_secret');
      }
      // Everything the request causes runs in its scope (request id on every log line,
      // abort accounting, the in-flight gauge) and, with tracing on, in its span. With a
      // router secret, every request that gets here carried it: no address share applies.
      options.serve(req, res, (record) => graphql(req, res, record, verdict === 'router')).catch((error: unknown) => {
        if (error instanceof ClientAbortedError) {
          metrics.graphqlAborted.inc({ operation_type: 'unknown' });
          logger.debug(error.message);
          return void res.destroy();
        }
        logger.error({ err: error }, 'GraphQL request failed');
        if (!res.headersSent) sendGraphQLError(res, 500, 'INTERNAL_SERVER_ERROR', 'Internal server error');
        else res.destroy();
      });
      return;
    }
    if (req.method === 'GET' && path === '/health') return sendJson(res, 200, { status: 'ok' });
    if (req.method === 'GET' && path === '/ready') {
      // A Redis outage does not make us unready: tokens then stay per replica. A token
      // endpoint that never answered like one does (a wrong WFS_AUTH_URL): no query could be served.
      const { draining, problem } = readiness();
      void options.sharedStoreUp().then((redis) => {
        const status = draining ? { status: 'draining', reason: DRAINING_REASON } : problem ? { status: 'not ready', reason: problem } : { status: 'ready' };
        sendJson(res, draining || problem ? 503 : 200, { ...status, ...(redis !== null && { sharedTokenStore: redis ? 'up' : 'down' }) });
      });
      return;
    }
    if (req.method === 'GET' && path === '/metrics') {
      // wfs_ready as /ready would answer now, whether or not anything asks /ready
      // (Compose and a bare process have no readiness probe): alerts read it.
      readiness();
      void metrics.registry.metrics().then((text) => {
        res.writeHead(200, { 'content-type': metrics.registry.contentType });
        res.end(text);
      });
      return;
    }
    if (options.explorer?.(req, res)) return;
    // Clients learn that the explorer is off, not which setting turns it on (that is for the operator's manual, docs/configuration.md).
    const hint = path === '/' && !options.explorer ? ' (the explorer is not served by this deployment)' : '';
    sendJson(res, 404, { error: `no route for ${req.method} ${path}; the GraphQL endpoint is ${graphqlPath}${hint}` });
  };
}
