import { currentRequest } from './requestContext';

/** The caches whose hits are counted: a closed set, so the `cache` label stays small. */
export type CacheName =
  /** The same page asked for twice within one GraphQL request. */
  | 'request_pages'
  /** Entity lookups answered by the short-lived per-tenant index (entityIndex.ts). */
  | 'entity_index';

/**
 * Counts cache lookups for the request being served (its debug line, and
 * `wfs_cache_requests_total` when it ends). A call from outside a request counts nowhere.
 */
export function noteCacheLookups(cache: CacheName, hits: number, misses = 0): void {
  const scope = currentRequest();
  if (!scope || hits + misses === 0) return;
  const counts = ((scope.cacheLookups ??= {})[cache] ??= { hits: 0, misses: 0 });
  counts.hits += hits;
  counts.misses += misses;
}

/**
 * Counts an upstream call answered by an identical call already in flight, possibly
 * another request's (the coalescer calls this from the follower's request).
 */
export function noteCoalesced(list: string): void {
  const scope = currentRequest();
  if (!scope) return;
  scope.coalesced += 1;
  scope.metrics?.upstreamCoalesced.inc({ list });
}

/** Names the tenant of the request being served, for its log lines (the debug line, failures outside calls). */
export function noteTenant(tenantId: string): void {
  const scope = currentRequest();
  if (scope) scope.tenantId = tenantId;
}
