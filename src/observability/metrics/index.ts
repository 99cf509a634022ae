/**
 * The Prometheus metrics served at `/metrics`; one registry per server, so tests do
 * not share counters. Names follow the Prometheus conventions (base units in the
 * name, `_total` on counters) and no label carries a tenant id: a deployment with
 * thousands of companies would otherwise grow thousands of series per metric.
 * docs/operations.md, "Metrics", lists each family and what to read it with.
 *
 * Defined by domain, one module each: the process (process.ts), the upstream
 * (upstream.ts), the cache (cache.ts), HTTP (http.ts), live updates (live.ts), with the
 * refusal counters' reasons in refusals.ts; each starts its series from zero. The
 * Observer port's events are mapped onto them apart, in ../metricsObserver.ts.
 */
import { Registry } from 'prom-client';
import { createCacheMetrics, type CacheMetrics } from './cache';
import { createHttpMetrics, type HttpMetrics } from './http';
import { createLiveMetrics, type LiveMetrics } from './live';
import { collectProcessMetrics, createReplicaMetrics, type ReplicaMetrics } from './process';
import { startRefusalsFromZero } from './refusals';
import { createResilienceMetrics, createTokenMetrics, createUpstreamCallMetrics, type ResilienceMetrics, type TokenMetrics, type UpstreamCallMetrics } from './upstream';

export { registerHeldUnits } from './cache';

export interface Metrics extends UpstreamCallMetrics, CacheMetrics, TokenMetrics, HttpMetrics, ReplicaMetrics {
  readonly registry: Registry;
  /** Upstream resilience (breaker, retries, bulkhead, fail-fast refusals): upstream.ts. */
  readonly resilience: ResilienceMetrics;
  /** Live updates (src/live/; refusals from graphql/admission/subscribeGate.ts and the transport, http/liveSocket.ts): live.ts. */
  readonly live: LiveMetrics;
  /**
   * Stops observing the process (the GC observer of `collectProcessMetrics`): the server's
   * `close()` calls it, after which nothing the process keeps reaches this registry.
   */
  close(): void;
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  const stopObserving = collectProcessMetrics(registry);
  const registers = [registry];
  // Registered in this order, domains interleaved: /metrics lists the families in the
  // order they were registered, and that order is kept as it was.
  const metrics: Metrics = {
    registry,
    ...createUpstreamCallMetrics(registers),
    ...createCacheMetrics(registers),
    ...createTokenMetrics(registers),
    ...createHttpMetrics(registers),
    ...createReplicaMetrics(registers),
    resilience: createResilienceMetrics(registers),
    live: createLiveMetrics(registers),
    close: stopObserving,
  };
  startRefusalsFromZero(metrics);
  return metrics;
}
