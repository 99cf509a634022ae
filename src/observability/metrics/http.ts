/**
 * The GraphQL requests served over HTTP: operations by type and name (a few names; the
 * rest "other"), their duration, errors by code, aborts, what is in flight (and the
 * WebSocket transport's queued messages), and what the connection and request bounds
 * refused (the reasons: graphql/admission/refusals.ts).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { LATENCY_BUCKETS } from './buckets';

export interface HttpMetrics {
  readonly graphqlRequests: Counter<'operation_type' | 'operation_name'>;
  readonly graphqlDuration: Histogram<'operation_type' | 'operation_name' | 'outcome'>;
  readonly graphqlErrors: Counter<'code'>;
  readonly graphqlAborted: Counter<'operation_type'>;
  readonly graphqlInFlight: Gauge;
  readonly requestBodyBytes: Gauge;
  /** Bytes WebSocket connections' messages hold, received but not yet handled, counted as parsed (http/liveInbox.ts). */
  readonly liveQueuedMessageBytes: Gauge;
  /** GraphQL requests refused before any GraphQL work, by the bound reached (graphql/admission/refusals.ts). */
  readonly requestsRefused: Counter<'reason'>;
  /** Connections closed by a connection bound before a request of theirs was served (graphql/admission/refusals.ts). */
  readonly connectionsRefused: Counter<'reason'>;
}

/** The HTTP metrics: operations, duration, errors, aborts, requests, body bytes in flight and WebSocket message bytes queued, requests and connections refused. */
export function createHttpMetrics(registers: Registry[]): HttpMetrics {
  const metrics: HttpMetrics = {
    graphqlRequests: new Counter({
      name: 'wfs_graphql_requests_total',
      help: 'GraphQL operations executed, by operation type and name (a few names; the rest are "other")',
      labelNames: ['operation_type', 'operation_name'],
      registers,
    }),
    graphqlDuration: new Histogram({
      name: 'wfs_graphql_request_duration_seconds',
      help: 'GraphQL request duration by operation type, name and outcome (ok, error, aborted)',
      labelNames: ['operation_type', 'operation_name', 'outcome'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    graphqlErrors: new Counter({
      name: 'wfs_graphql_errors_total',
      help: 'GraphQL errors sent, by extensions.code (errors of requests the client abandoned are not sent, so not counted)',
      labelNames: ['code'],
      registers,
    }),
    graphqlAborted: new Counter({
      name: 'wfs_graphql_requests_aborted_total',
      help: 'GraphQL requests whose client closed the connection before the response, by operation type',
      labelNames: ['operation_type'],
      registers,
    }),
    graphqlInFlight: new Gauge({
      name: 'wfs_graphql_requests_in_flight',
      help: 'GraphQL requests being served',
      registers,
    }),
    requestBodyBytes: new Gauge({
      name: 'wfs_graphql_request_body_bytes',
      help: 'Bytes the bodies of the GraphQL requests in flight hold, counted as parsed: twice their bytes and 64 a JSON value (at 64 MiB, further requests are answered 503)',
      registers,
    }),
    liveQueuedMessageBytes: new Gauge({
      name: 'wfs_live_queued_message_bytes',
      help: "Bytes WebSocket connections' messages hold, received but not yet handled, counted as parsed (a connection past 1 MiB, or any while all pass 32 MiB, is not read until they drain)",
      registers,
    }),
    requestsRefused: new Counter({
      name: 'wfs_graphql_requests_refused_total',
      help: 'GraphQL requests refused before any GraphQL work, by the bound reached (503: body_bytes, in_flight; 429: address_body_bytes, address_in_flight, one address past its share; 408: body_timeout; 401: query_router_secret; 400: query_document, query_cost, a document refused by the query limits, validation or the cost bound; query_subscription, a subscription sent over HTTP)',
      labelNames: ['reason'],
      registers,
    }),
    connectionsRefused: new Counter({
      name: 'wfs_http_connections_refused_total',
      help: 'Connections closed by a connection bound before a request of theirs was served, by reason (replica: all open sockets; address: one client address past its share; headers_timeout, request_timeout: 408)',
      labelNames: ['reason'],
      registers,
    }),
  };
  metrics.graphqlAborted.inc({ operation_type: 'query' }, 0);
  return metrics;
}
