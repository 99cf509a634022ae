import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** The Prometheus metrics served at `/metrics`; one registry per server, so tests do not share counters. */
export interface Metrics {
  readonly registry: Registry;
  readonly upstreamRequests: Counter<'list' | 'status'>;
  readonly upstreamDuration: Histogram<'list'>;
  readonly tokenRequests: Counter<'outcome'>;
  readonly graphqlRequests: Counter<'operation_type'>;
  readonly graphqlErrors: Counter<'code'>;
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
  };
}
