import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** The Prometheus metrics served at `/metrics`; one registry per server, so tests do not share counters. */
export interface Metrics {
  readonly registry: Registry;
  readonly upstreamRequests: Counter<'list' | 'status'>;
  readonly upstreamDuration: Histogram<'list'>;
  readonly tokenRequests: Counter<'outcome'>;
  readonly graphqlRequests: Counter<'operation_type'>;
  readonly graphqlErrors: Counter<'code'>;
  /** Upstream resilience (breaker, retries, bulkhead, coalescing): see the block at the end. */
  readonly resilience: ResilienceMetrics;
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    upstreamRequests: new Counter({
      name: 'wfs_upstream_requests_total',
      help: 'Upstream list calls by list and HTTP status (0: network error or timeout)',
      labelNames: ['list', 'status'],
      registers: [registry],
    }),
    upstreamDuration: new Histogram({
      name: 'wfs_upstream_request_duration_seconds',
      help: 'Duration of upstream list calls',
      labelNames: ['list'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    tokenRequests: new Counter({
      name: 'wfs_token_requests_total',
      help: 'Requests sent to the token endpoint, by outcome (ok or an error code)',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    graphqlRequests: new Counter({
      name: 'wfs_graphql_requests_total',
      help: 'GraphQL operations executed, by operation type',
      labelNames: ['operation_type'],
      registers: [registry],
    }),
    graphqlErrors: new Counter({
      name: 'wfs_graphql_errors_total',
      help: 'GraphQL errors sent, by extensions.code',
      labelNames: ['code'],
      registers: [registry],
    }),
    resilience: createResilienceMetrics(registry),
  };
}

// ---------------------------------------------------------------------------
// Upstream resilience metrics (owned by the upstream client: breaker, retries,
// bulkhead, in-flight coalescing, fail-fast refusals). Fed through the client's
// ResilienceListener, wired in `src/app.ts`.
// ---------------------------------------------------------------------------

export interface ResilienceMetrics {
  /** 0 closed, 1 open, 2 half-open, per shard origin. */
  readonly breakerState: Gauge<'shard'>;
  readonly breakerTransitions: Counter<'shard' | 'state'>;
  readonly retries: Counter<'list' | 'reason'>;
  readonly coalesced: Counter<'list'>;
  readonly bulkheadQueued: Counter;
  readonly bulkheadRejected: Counter;
  readonly failFast: Counter<'reason'>;
}

export const BREAKER_STATE_VALUES = { closed: 0, open: 1, 'half-open': 2 } as const;

function createResilienceMetrics(registry: Registry): ResilienceMetrics {
  return {
    breakerState: new Gauge({
      name: 'wfs_upstream_breaker_state',
      help: 'Circuit breaker state per upstream shard origin (0 closed, 1 open, 2 half-open)',
      labelNames: ['shard'],
      registers: [registry],
    }),
    breakerTransitions: new Counter({
      name: 'wfs_upstream_breaker_transitions_total',
      help: 'Circuit breaker state changes per upstream shard origin, by the state entered',
      labelNames: ['shard', 'state'],
      registers: [registry],
    }),
    retries: new Counter({
      name: 'wfs_upstream_retries_total',
      help: 'Upstream call retries, by list and reason (transient, rate-limited, retry-after, unauthorized)',
      labelNames: ['list', 'reason'],
      registers: [registry],
    }),
    coalesced: new Counter({
      name: 'wfs_upstream_coalesced_total',
      help: 'Upstream page calls shared with an identical call already in flight (no call sent)',
      labelNames: ['list'],
      registers: [registry],
    }),
    bulkheadQueued: new Counter({
      name: 'wfs_upstream_bulkhead_queued_total',
      help: "Upstream calls that waited because their tenant's concurrency limit was reached",
      registers: [registry],
    }),
    bulkheadRejected: new Counter({
      name: 'wfs_upstream_bulkhead_rejected_total',
      help: "Upstream calls refused because their tenant's bulkhead queue was full",
      registers: [registry],
    }),
    failFast: new Counter({
      name: 'wfs_upstream_fail_fast_total',
      help: 'Page calls refused without calling the upstream, by reason (breaker, retry-after, bulkhead, budget)',
      labelNames: ['reason'],
      registers: [registry],
    }),
  };
}
