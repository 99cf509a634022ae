import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Metrics } from '../metrics';
import type { CacheName } from './hits';

/**
 * What one GraphQL request carries through every async step it causes: its id for
 * the logs, whether the client went away, and the tallies of the per-request debug
 * line. Kept in an AsyncLocalStorage so no function has to pass it on by hand: the
 * logger's mixin reads the id, the upstream observer and the Apollo plugin count here.
 */
export interface RequestScope {
  readonly requestId: string;
  /** performance.now() at arrival. */
  readonly startedAt: number;
  /** The client closed the connection before the response was written. */
  aborted: boolean;
  tenantId?: string;
  /** The shard origin of the last upstream attempt (a tenant has one shard), for failures found after the calls. */
  lastOrigin?: string;
  /** Upstream list calls this request made (each may have several HTTP attempts). */
  upstreamCalls: number;
  /** Upstream calls answered by one already in flight (coalescing). */
  coalesced: number;
  /**
   * Lookups per cache (pages or records answered from a cache instead of the upstream,
   * and those that were not), added to `wfs_cache_requests_total` once when the request
   * ends: one counter update per cache and result instead of one per record looked up
   * (prom-client builds a label key on every update). `cacheHitsOf` sums the hits.
   */
  cacheLookups?: Partial<Record<CacheName, { hits: number; misses: number }>>;
  /** The serving process's metrics, for counters bumped deep in the call stack (hits.ts). */
  readonly metrics?: Metrics;
}

const storage = new AsyncLocalStorage<RequestScope>();

/** The scope of the request being served, or undefined outside one (start-up, timers). */
export function currentRequest(): RequestScope | undefined {
  return storage.getStore();
}

/**
 * Tracing plugs in here (`src/telemetry` registers `currentTraceId`): the trace id is
 * then on every log line written while a span is active.
 */
let traceIdProvider: (() => string | undefined) | undefined;

export function setTraceIdProvider(provider: (() => string | undefined) | undefined): void {
  traceIdProvider = provider;
}

/** The fields pino's mixin adds to every line: the request id and, when tracing is on, the trace id. */
export function requestLogFields(): Record<string, string> {
  const scope = storage.getStore();
  const traceId = traceIdProvider?.();
  if (!scope && !traceId) return {};
  return { ...(scope && { requestId: scope.requestId }), ...(traceId && { traceId }) };
}

/** A caller-supplied request id is kept when it is short and plain; anything else gets a fresh one. */
const USABLE_REQUEST_ID = /^[\w.:-]{1,128}$/;

/**
 * Runs `handler` inside a new request scope. The id comes from `x-request-id` when the
 * router sends a usable one (so its logs and ours join up), is echoed back in the
 * response, and `onEnd` runs once when the connection closes, after the response or
 * after the client went away.
 */
export function runInRequestScope<T>(
  req: IncomingMessage,
  res: ServerResponse,
  options: { metrics?: Metrics; onEnd?: (scope: RequestScope) => void },
  handler: () => T,
): T {
  const header = req.headers['x-request-id'];
  const offered = Array.isArray(header) ? header[0] : header;
  const scope: RequestScope = {
    requestId: offered && USABLE_REQUEST_ID.test(offered) ? offered : randomUUID(),
    startedAt: performance.now(),
    aborted: false,
    upstreamCalls: 0,
    coalesced: 0,
    ...(options.metrics && { metrics: options.metrics }),
  };
  res.setHeader('x-request-id', scope.requestId);
  // Registered before the handler's own 'close' listener, so the flag is set before
  // the request's AbortController fires and any upstream call sees the abort.
  res.once('close', () => {
    if (!res.writableFinished) scope.aborted = true;
    countCacheLookups(scope);
    options.onEnd?.(scope);
  });
  return storage.run(scope, handler);
}

/** The request's cache hits, every cache together (its debug line). */
export function cacheHitsOf(scope: RequestScope): number {
  let hits = 0;
  for (const counts of Object.values(scope.cacheLookups ?? {})) hits += counts.hits;
  return hits;
}

function countCacheLookups(scope: RequestScope): void {
  if (!scope.cacheLookups || !scope.metrics) return;
  for (const [cache, { hits, misses }] of Object.entries(scope.cacheLookups)) {
    if (hits > 0) scope.metrics.cacheRequests.inc({ cache, result: 'hit' }, hits);
    if (misses > 0) scope.metrics.cacheRequests.inc({ cache, result: 'miss' }, misses);
  }
}

/** Runs `fn` inside a given scope (tests, and work started for a request from elsewhere). */
export function runInScope<T>(scope: RequestScope, fn: () => T): T {
  return storage.run(scope, fn);
}
