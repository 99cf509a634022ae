/**
 * What is answered without doing the work again (docs/caching.md): requests shared while
 * in flight, lookups of every cache by result, what the companies' indexes drop and what
 * polls confirm, the watching choices, the invalidations sent to the gateways, and the
 * units held against the replica's memory budget.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

export interface CacheMetrics {
  readonly requestsShared: Counter;
  /** Invalidations sent to the gateways, by outcome (live/invalidation.ts). */
  readonly cacheInvalidations: Counter<'outcome'>;
  /** Companies' indexes of a list that dropped what they held, by cause (expired, changed). */
  readonly cacheDrops: Counter<'cause'>;
  /** Polls that checked what an index held, by result (extended, unconfirmed). */
  readonly cacheConfirmations: Counter<'result'>;
  /** Watching choices (live/watch.ts), by decision (started, stopped, refused). */
  readonly cacheWatching: Counter<'decision'>;
  readonly cacheRequests: Counter<'cache' | 'result'>;
}

/** The cache metrics, every series a dashboard reads from zero. */
export function createCacheMetrics(registers: Registry[]): CacheMetrics {
  const metrics: CacheMetrics = {
    requestsShared: new Counter({
      name: 'wfs_graphql_requests_shared_total',
      help: 'GraphQL requests answered by an identical request in flight (same tenant and body) instead of executing',
      registers,
    }),
    cacheInvalidations: new Counter({
      name: 'wfs_cache_invalidations_total',
      help: 'Cache invalidations sent to the gateways (WFS_CACHE_INVALIDATION_URLS): POSTs by outcome (sent, failed, rejected), and tags dropped because the queue was full (dropped)',
      labelNames: ['outcome'],
      registers,
    }),
    cacheDrops: new Counter({
      name: 'wfs_cache_drops_total',
      help: "Companies' indexes of a list (records and kept pages) dropped while holding something, by cause (expired: the window ended; changed: a live poll saw the list change, here or on another replica)",
      labelNames: ['cause'],
      registers,
    }),
    cacheConfirmations: new Counter({
      name: 'wfs_cache_confirmations_total',
      help: 'Live polls that saw no change and checked what an index held of the list, by result (extended: served for another window from the poll; unconfirmed: it expires as it would have)',
      labelNames: ['result'],
      registers,
    }),
    cacheWatching: new Counter({
      name: 'wfs_cache_watching_total',
      help: "Watching choices for a company's list (docs/caching.md, \"Watched lists\"), by decision (started, stopped, refused: the replica's bound on watched lists was reached)",
      labelNames: ['decision'],
      registers,
    }),
    cacheRequests: new Counter({
      name: 'wfs_cache_requests_total',
      help: 'Cache lookups by cache (request_pages, entity_index, kept_pages, whole_answers) and result (hit, miss)',
      labelNames: ['cache', 'result'],
      registers,
    }),
  };
  for (const cache of ['request_pages', 'entity_index', 'kept_pages', 'whole_answers']) {
    for (const result of ['hit', 'miss']) metrics.cacheRequests.inc({ cache, result }, 0);
  }
  for (const outcome of ['sent', 'failed', 'rejected', 'dropped']) metrics.cacheInvalidations.inc({ outcome }, 0);
  for (const cause of ['expired', 'changed']) metrics.cacheDrops.inc({ cause }, 0);
  for (const result of ['extended', 'unconfirmed']) metrics.cacheConfirmations.inc({ result }, 0);
  for (const decision of ['started', 'stopped', 'refused']) metrics.cacheWatching.inc({ decision }, 0);
  return metrics;
}

/**
 * `wfs_cache_held_units`: what the entity indexes (their kept pages included) and the
 * live pollers' snapshots hold against WFS_ENTITY_INDEX_MAX_RECORDS, in record units
 * (about 300 bytes each), read from `held` at each scrape (memory/budget.ts, `held`).
 */
export function registerHeldUnits(metrics: { readonly registry: Registry }, held: () => number): void {
  new Gauge({
    name: 'wfs_cache_held_units',
    help: "Record units (about 300 bytes each) the entity indexes, their kept pages and the live pollers' snapshots hold against WFS_ENTITY_INDEX_MAX_RECORDS",
    registers: [metrics.registry],
    collect() {
      this.set(held());
    },
  });
}
