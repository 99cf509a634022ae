import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Observer, RequestRecord } from '../upstream/observer';

/**
 * The record of the request being served (upstream/observer.ts, `RequestRecord`), for what cannot
 * be handed it: log lines (pino's mixin adds the request id to every line), and events
 * from machinery shared by requests (the token cache, a call another request started).
 * The GraphQL context carries the same record; this AsyncLocalStorage is the one the
 * observability layer keeps, and nothing outside the layer reads it.
 */
const storage = new AsyncLocalStorage<RequestRecord>();

/** The record of the request being served, or undefined outside one (start-up, timers). */
export function currentRequest(): RequestRecord | undefined {
  return storage.getStore();
}

/** The trace id of the active span, when tracing is on (observability/index.ts sets it once tracing started). */
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
 * Runs `handler` with a new request record. The id comes from `x-request-id` when the
 * router sends a usable one (so its logs and ours join up), is echoed back in the
 * response, and `onEnd` runs once when the connection closes, after the response or
 * after the client went away.
 */
export function runInRequestScope<T>(req: IncomingMessage, res: ServerResponse, onEnd: (record: RequestRecord) => void, handler: (record: RequestRecord) => T): T {
  const header = req.headers['x-request-id'];
  const offered = Array.isArray(header) ? header[0] : header;
  const record: RequestRecord = {
    requestId: offered && USABLE_REQUEST_ID.test(offered) ? offered : randomUUID(),
    startedAt: performance.now(),
    aborted: false,
    upstreamCalls: 0,
    coalesced: 0,
  };
  res.setHeader('x-request-id', record.requestId);
  // Registered before the handler's own 'close' listener, so the flag is set before
  // the request's AbortController fires and any upstream call sees the abort.
  // `on`, not `once`: close comes once, and `once` wraps the listener in two objects more.
  res.on('close', () => {
    if (!res.writableFinished) record.aborted = true;
    onEnd(record);
  });
  return storage.run(record, () => handler(record));
}

/** The request's cache hits, every cache together (its debug line). */
export function cacheHitsOf(record: RequestRecord): number {
  let hits = 0;
  for (const counts of Object.values(record.cacheLookups ?? {})) hits += counts.hits;
  return hits;
}

/** Runs `fn` with a given record (tests, and work started for a request from elsewhere). */
export function runInScope<T>(record: RequestRecord, fn: () => T): T {
  return storage.run(record, fn);
}

/** Fills in the record of the request being served: its tenant, cache lookups and coalesced calls. */
export function requestRecordObserver(): Partial<Observer> {
  return {
    tenantIdentified(tenantId) {
      const scope = storage.getStore();
      if (scope) scope.tenantId = tenantId;
    },
    cacheLookup(cache, hits, misses) {
      const scope = storage.getStore();
      if (!scope || hits + misses === 0) return;
      const counts = ((scope.cacheLookups ??= {})[cache] ??= { hits: 0, misses: 0 });
      counts.hits += hits;
      counts.misses += misses;
    },
    // Possibly another request's call: the coalescer reports it from the follower's request.
    upstreamCoalesced() {
      const scope = storage.getStore();
      if (scope) scope.coalesced += 1;
    },
  };
}
