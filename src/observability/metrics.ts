import { PerformanceObserver, constants as performanceConstants } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { REFUSAL_REASONS, reasonsOf, refusal, type RefusalMetric, type RefusalReason } from '../graphql/admission/refusals';
import type { RedisDropReason } from '../live/redisMessages';
import type { UpstreamErrorCode } from '../upstream/errors';
import type { Observer, PollerReason, RequestRecord } from '../upstream/observer';
import { RESOURCES } from '../upstream/resources';

/**
 * The Prometheus metrics served at `/metrics`; one registry per server, so tests do
 * not share counters. Names follow the Prometheus conventions (base units in the
 * name, `_total` on counters) and no label carries a tenant id: a deployment with
 * thousands of companies would otherwise grow thousands of series per metric.
 * docs/operations.md, "Metrics", lists each family and what to read it with.
 */

/** Every reason a poller runs (`wfs_live_pollers{reason}`). */
const POLLER_REASONS = ['subscribers', 'watched', 'both'] as const satisfies readonly PollerReason[];

/** Every reason a message or lease read from Redis is dropped (live/redisMessages.ts). */
const REDIS_DROP_REASONS = ['oversized', 'unsealed', 'forged', 'malformed', 'replayed', 'lease', 'unpublishable'] as const satisfies readonly RedisDropReason[];

/**
 * Every outcome of a token request (`wfs_token_requests_total{outcome}`): `ok`, or the code
 * requestToken's error carries (tokenEndpoint.ts; anything else counts as
 * UPSTREAM_UNAVAILABLE). The alerts read it in two parts: the endpoint's own failures
 * (UNAVAILABLE: unreachable, timed out, 5xx; RATE_LIMITED: 429; BAD_RESPONSE: no token
 * response) page, one tenant's refusal (UNAUTHORIZED: 400/401/403) or unusable token
 * (MISCONFIGURED) opens a ticket.
 */
const TOKEN_REQUEST_OUTCOMES = ['ok', 'UPSTREAM_UNAVAILABLE', 'UPSTREAM_RATE_LIMITED', 'UPSTREAM_BAD_RESPONSE', 'UPSTREAM_UNAUTHORIZED', 'UPSTREAM_MISCONFIGURED'] as const satisfies ReadonlyArray<'ok' | UpstreamErrorCode>;

export interface Metrics {
  readonly registry: Registry;
  /** Each HTTP attempt to a shard, by list, shard origin and status (0: network error); client aborts are not counted. */
  readonly upstreamRequests: Counter<'list' | 'origin' | 'status'>;
  readonly upstreamDuration: Histogram<'list' | 'origin'>;
  /** Each list call once, after its retries: `ok`, `aborted` or a failure cause (failureCause.ts). */
  readonly upstreamCalls: Counter<'list' | 'origin' | 'outcome'>;
  readonly upstreamCoalesced: Counter<'list'>;
  readonly requestsShared: Counter;
  readonly cacheRequests: Counter<'cache' | 'result'>;
  /** Invalidations sent to the gateways, by outcome (cache/invalidation.ts). */
  readonly cacheInvalidations: Counter<'outcome'>;
  /** Companies' indexes of a list that dropped what they held, by cause (expired, changed). */
  readonly cacheDrops: Counter<'cause'>;
  /** Polls that checked what an index held, by result (extended, unconfirmed). */
  readonly cacheConfirmations: Counter<'result'>;
  /** Watching choices (live/watch.ts), by decision (started, stopped, refused). */
  readonly cacheWatching: Counter<'decision'>;
  readonly tokenRequests: Counter<'outcome'>;
  readonly tokenDuration: Histogram<'outcome'>;
  /** 1 while the shared token store (Redis) answers, 0 while it does not; no sample without Redis. What is stored in it does not move it. */
  readonly sharedTokenStoreUp: Gauge<'store'>;
  /** Values in the shared token store refused as token records or refresh locks, by reason (seal, shape, size: tokenRecord.ts). */
  readonly sharedTokenStoreRejected: Counter<'reason'>;
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
  /** 1 while `/ready` answers ready, 0 while it answers 503 (not ready yet, or draining); set at each /ready and /metrics. */
  readonly ready: Gauge;
  readonly logLinesSuppressed: Counter<'event'>;
  /** Upstream resilience (breaker, retries, bulkhead, fail-fast refusals): see the block at the end. */
  readonly resilience: ResilienceMetrics;
  /** Live updates (src/live/; refusals from graphql/admission/subscribeGate.ts and the transport, http/liveSocket.ts): see the block at the end. */
  readonly live: LiveMetrics;
  /**
   * Stops observing the process (the GC observer of `collectProcessMetrics`): the server's
   * `close()` calls it, after which nothing the process keeps reaches this registry.
   */
  close(): void;
}

/** Seconds; 1 s is the latency SLO's threshold (deploy/prometheus/alerts.yaml), so it must stay a bucket. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20];

export function createMetrics(): Metrics {
  const registry = new Registry();
  const stopObserving = collectProcessMetrics(registry);
  const registers = [registry];
  const metrics: Metrics = {
    registry,
    ...createUpstreamMetrics(registers),
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
    ...createTokenMetrics(registers),
    ...createGraphqlMetrics(registers),
    connectionsRefused: new Counter({
      name: 'wfs_http_connections_refused_total',
      help: 'Connections closed by a connection bound before a request of theirs was served, by reason (replica: all open sockets; address: one client address past its share; headers_timeout, request_timeout: 408)',
      labelNames: ['reason'],
      registers,
    }),
    ready: new Gauge({
      name: 'wfs_ready',
      help: '1 while /ready answers ready, 0 while it answers 503 (not ready yet, or draining)',
      registers,
    }),
    logLinesSuppressed: new Counter({
      name: 'wfs_log_lines_suppressed_total',
      help: 'Log lines not written by the per-key log rate limit (their count is logged periodically)',
      labelNames: ['event'],
      registers,
    }),
    resilience: createResilienceMetrics(registry),
    live: createLiveMetrics(registry),
    close: stopObserving,
  };
  startFromZero(metrics);
  return metrics;
}

/** prom-client's name for its GC histogram, and what its default GC collector gives it. */
const GC_DURATION = {
  name: 'nodejs_gc_duration_seconds',
  help: 'Garbage collection duration by kind, one of major, minor, incremental or weakcb.',
  buckets: [0.001, 0.01, 0.1, 1, 2, 5],
} as const;

const GC_KINDS: Readonly<Record<number, string>> = {
  [performanceConstants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [performanceConstants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [performanceConstants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [performanceConstants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};

/**
 * prom-client's default metrics (`process_*`, `nodejs_*`), the same names, help and
 * buckets, with one difference: the GC histogram is fed by an observer that the returned
 * function disconnects.
 *
 * prom-client's own GC collector starts a PerformanceObserver that nothing can disconnect
 * (prometheus/client_js#500, open since 2022). Node keeps every observer for the process's
 * life, and through its callback the registry, every metric's collect function and what
 * they reach: the HTTP server, the caches, the company's records. A process that starts and
 * closes servers kept each one whole (measured on 28 November 2026: the test line's Jest
 * workers held every suite's servers, 450 MB of heap each by the end).
 *
 * The histogram is registered before the defaults. prom-client registers its GC collector
 * last (lib/defaultMetrics.js), and that collector's registering under a name already
 * taken throws before its observer starts: that error, and only that one, is expected.
 * test/unit/processMetrics.test.ts checks that every default metric is still served.
 */
function collectProcessMetrics(registry: Registry): () => void {
  const gcDuration = new Histogram({ ...GC_DURATION, buckets: [...GC_DURATION.buckets], labelNames: ['kind'], registers: [registry] });
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      // A GC entry's `detail` is `{ kind, flags }` (Node's perf_hooks documentation, "Garbage Collection ('gc') Details").
      const kind = GC_KINDS[(entry as { detail?: { kind?: number } | null }).detail?.kind ?? -1];
      if (kind) gcDuration.observe({ kind }, entry.duration / 1000);
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  try {
    collectDefaultMetrics({ register: registry });
  } catch (error) {
    if (!(error instanceof Error && error.message.includes(GC_DURATION.name))) {
      observer.disconnect();
      throw error;
    }
  }
  return () => observer.disconnect();
}

/** The upstream call metrics: HTTP attempts per shard, their duration, calls after retries, coalesced calls. */
function createUpstreamMetrics(registers: Registry[]): Pick<Metrics, 'upstreamRequests' | 'upstreamDuration' | 'upstreamCalls' | 'upstreamCoalesced'> {
  return {
    upstreamRequests: new Counter({
      name: 'wfs_upstream_requests_total',
      help: 'HTTP attempts to the upstream by list, shard origin and status (0: network error or timeout); calls cancelled because the client went away are not counted',
      labelNames: ['list', 'origin', 'status'],
      registers,
    }),
    upstreamDuration: new Histogram({
      name: 'wfs_upstream_request_duration_seconds',
      help: 'Duration of HTTP attempts to the upstream, by list and shard origin (client aborts excluded)',
      labelNames: ['list', 'origin'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    upstreamCalls: new Counter({
      name: 'wfs_upstream_calls_total',
      help: 'Upstream list calls after retries, by list, shard origin and outcome (ok, aborted, or the failure cause)',
      labelNames: ['list', 'origin', 'outcome'],
      registers,
    }),
    upstreamCoalesced: new Counter({
      name: 'wfs_upstream_coalesced_total',
      help: 'Upstream list calls answered by an identical call already in flight',
      labelNames: ['list'],
      registers,
    }),
  };
}

/** The token metrics: token endpoint requests and their duration, the shared token store's health and refused records. */
function createTokenMetrics(registers: Registry[]): Pick<Metrics, 'tokenRequests' | 'tokenDuration' | 'sharedTokenStoreUp' | 'sharedTokenStoreRejected'> {
  return {
    tokenRequests: new Counter({
      name: 'wfs_token_requests_total',
      help: 'Requests sent to the token endpoint, by outcome (ok or an error code)',
      labelNames: ['outcome'],
      registers,
    }),
    tokenDuration: new Histogram({
      name: 'wfs_token_request_duration_seconds',
      help: 'Duration of token endpoint requests (token refresh latency), by outcome (ok, error)',
      labelNames: ['outcome'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
    sharedTokenStoreUp: new Gauge({
      name: 'wfs_shared_token_store_up',
      help: '1 while the shared token store (Redis) answers commands, 0 while it does not (no sample when none is configured); records it refuses do not move it',
      labelNames: ['store'],
      registers,
    }),
    sharedTokenStoreRejected: new Counter({
      name: 'wfs_shared_token_store_rejected_records_total',
      help: 'Values in the shared token store refused as token records or refresh locks, by reason (seal: not sealed with our WFS_REDIS_KEY; shape: not as a replica writes it; size: too long, refused unread)',
      labelNames: ['reason'],
      registers,
    }),
  };
}

/** The GraphQL request metrics: operations, duration, errors, aborts, requests and body bytes in flight, requests refused. */
function createGraphqlMetrics(registers: Registry[]): Pick<Metrics, 'graphqlRequests' | 'graphqlDuration' | 'graphqlErrors' | 'graphqlAborted' | 'graphqlInFlight' | 'requestBodyBytes' | 'liveQueuedMessageBytes' | 'requestsRefused'> {
  return {
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
  };
}

/**
 * `wfs_cache_held_units`: what the entity indexes (their kept pages included) and the
 * live pollers' snapshots hold against WFS_ENTITY_INDEX_MAX_RECORDS, in record units
 * (about 300 bytes each), read from `held` at each scrape.
 */
export function registerHeldUnits(metrics: Metrics, held: () => number): void {
  new Gauge({
    name: 'wfs_cache_held_units',
    help: "Record units (about 300 bytes each) the entity indexes, their kept pages and the live pollers' snapshots hold against WFS_ENTITY_INDEX_MAX_RECORDS",
    registers: [metrics.registry],
    collect() {
      this.set(held());
    },
  });
}

/** Sets the series that exist from the start, so rate() and the dashboards see zero, not "no data", and the gauges' starting values. */
function startFromZero(metrics: Metrics): void {
  for (const { name: list } of RESOURCES) metrics.upstreamCoalesced.inc({ list }, 0);
  for (const cache of ['request_pages', 'entity_index', 'kept_pages', 'whole_answers']) {
    for (const result of ['hit', 'miss']) metrics.cacheRequests.inc({ cache, result }, 0);
  }
  metrics.graphqlAborted.inc({ operation_type: 'query' }, 0);
  for (const outcome of ['sent', 'failed', 'rejected', 'dropped']) metrics.cacheInvalidations.inc({ outcome }, 0);
  for (const cause of ['expired', 'changed']) metrics.cacheDrops.inc({ cause }, 0);
  for (const result of ['extended', 'unconfirmed']) metrics.cacheConfirmations.inc({ result }, 0);
  for (const decision of ['started', 'stopped', 'refused']) metrics.cacheWatching.inc({ decision }, 0);
  for (const reason of POLLER_REASONS) metrics.live.pollers.set({ reason }, 0);
  // Every refusal reason from zero on its counter (graphql/admission/refusals.ts).
  for (const [metric, counter] of refusalCounters(metrics)) for (const reason of reasonsOf(metric)) counter.inc({ reason }, 0);
  // From zero, so the first message dropped is an increase the alert sees (WfsSubgraphLiveRedisDropped).
  for (const reason of REDIS_DROP_REASONS) metrics.live.redisDropped.inc({ reason }, 0);
  // From zero, so a tenant's first refused token is an increase WfsSubgraphTokensRefused sees.
  for (const outcome of TOKEN_REQUEST_OUTCOMES) metrics.tokenRequests.inc({ outcome }, 0);
  metrics.logLinesSuppressed.inc({ event: 'upstream_call_failed' }, 0);
  metrics.ready.set(1);
  metrics.live.stretchFactor.set(1);
}

// ---------------------------------------------------------------------------
// Upstream resilience metrics (breaker, retries, bulkhead, fail-fast refusals), fed
// by the client's events (`metricsObserver` below).
// ---------------------------------------------------------------------------

export interface ResilienceMetrics {
  /** 0 closed, 1 open, 2 half-open, per shard origin. */
  readonly breakerState: Gauge<'origin'>;
  readonly breakerTransitions: Counter<'origin' | 'state'>;
  readonly retries: Counter<'list' | 'reason'>;
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
      labelNames: ['origin'],
      registers: [registry],
    }),
    breakerTransitions: new Counter({
      name: 'wfs_upstream_breaker_transitions_total',
      help: 'Circuit breaker state changes per upstream shard origin, by the state entered',
      labelNames: ['origin', 'state'],
      registers: [registry],
    }),
    retries: new Counter({
      name: 'wfs_upstream_retries_total',
      help: 'Upstream call retries, by list and reason (transient, rate-limited, retry-after, unauthorized)',
      labelNames: ['list', 'reason'],
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

// ---------------------------------------------------------------------------
// Live-update metrics, fed by the live events (`metricsObserver` below). No tenant
// label (docs/operations.md, "Metrics"): `list`, `kind`, `outcome` and `reason` only.
// ---------------------------------------------------------------------------

export interface LiveMetrics {
  /** Open subscriptions on this replica, by list. */
  readonly subscriptions: Gauge<'list'>;
  /** Pollers on this replica (one per company and list with subscribers or watched here), by reason, and how many of them poll (lead) rather than listen. */
  readonly pollers: Gauge<'reason'>;
  readonly pollersLeading: Gauge;
  readonly polls: Counter<'list' | 'outcome'>;
  readonly pollDuration: Histogram<'list'>;
  /** Changes found (or received from another replica) once per poller, not per subscriber. */
  readonly changes: Counter<'list' | 'kind'>;
  readonly intervalsStretched: Counter;
  readonly stretchFactor: Gauge;
  readonly slowConsumersDropped: Counter;
  readonly refused: Counter<'reason'>;
  /** Messages and poll leases read from Redis and dropped (live/redisCoordinator.ts), by reason. */
  readonly redisDropped: Counter<'reason'>;
}

function createLiveMetrics(registry: Registry): LiveMetrics {
  const registers = [registry];
  return {
    subscriptions: new Gauge({ name: 'wfs_live_subscriptions', help: 'Open live subscriptions on this replica, by list', labelNames: ['list'], registers }),
    pollers: new Gauge({
      name: 'wfs_live_pollers',
      help: 'Live pollers on this replica, one per company and list, by reason (subscribers: live subscribers here; watched: read often by queries, docs/caching.md; both)',
      labelNames: ['reason'],
      registers,
    }),
    pollersLeading: new Gauge({ name: 'wfs_live_pollers_leading', help: 'Live pollers that poll the upstream from this replica (hold the Redis lease, or no Redis); the others hear another replica', registers }),
    polls: new Counter({ name: 'wfs_live_polls_total', help: 'Live polls (one walk of a list each), by list and outcome (ok, error: tried again next interval, fatal: subscriptions ended)', labelNames: ['list', 'outcome'], registers }),
    pollDuration: new Histogram({
      name: 'wfs_live_poll_duration_seconds',
      help: 'Duration of a live poll (every page of the list), by list',
      labelNames: ['list'],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20],
      registers,
    }),
    changes: new Counter({ name: 'wfs_live_changes_total', help: 'Changes found by live polls or heard from another replica, once per poller (not per subscriber), by list and kind', labelNames: ['list', 'kind'], registers }),
    intervalsStretched: new Counter({ name: 'wfs_live_intervals_stretched_total', help: "Poll delays stretched because the company's polls wanted more than its fair share of WFS_POLL_CALLS_PER_SECOND", registers }),
    stretchFactor: new Gauge({ name: 'wfs_live_poll_stretch_factor', help: "By how much the most stretched company's poll intervals are stretched now (1: the poll budget holds)", registers }),
    slowConsumersDropped: new Counter({ name: 'wfs_live_slow_consumers_dropped_total', help: 'Subscriptions or connections dropped because their client did not read fast enough', registers }),
    refused: new Counter({ name: 'wfs_live_subscriptions_refused_total', help: 'Subscriptions, WebSocket connections and upgrades refused, by reason, one bound each (graphql/admission/refusals.ts; docs/live.md lists them): upgrades (router_secret, replica_connections, address_connections, address_blocked), connections (identity, messages, refusals), subscribes (not_initialised, subscribe_identity, connection, company_rate, document, operation, variables, cost, connection_bytes, company_bytes, replica_bytes, company_subscriptions, replica_subscriptions, filters) and identities that lapsed (identity_lapsed)', labelNames: ['reason'], registers }),
    redisDropped: new Counter({
      name: 'wfs_live_redis_dropped_total',
      help: 'Live-update messages and poll leases read from Redis and dropped, by reason (oversized, unsealed, forged, malformed, replayed, lease: a lease value no replica wrote, taken over; unpublishable: a change of ours too large to publish)',
      labelNames: ['reason'],
      registers,
    }),
  };
}

/**
 * The Prometheus side of the events: resilience (retries, breaker, bulkhead,
 * fail-fast refusals), token requests, coalesced calls; cache lookups are added up
 * per request and counted when it ends (`requestEnded`). The per-shard call metrics
 * are counted with the calls' failure lines (upstreamObserver.ts).
 */
export function metricsObserver(metrics: Metrics, originLabel: (origin: string) => string): Partial<Observer> & { requestEnded(record: RequestRecord): void } {
  const { resilience, live } = metrics;
  return {
    liveSubscriptions: (list, delta) => live.subscriptions.inc({ list }, delta),
    livePollers: (reason, delta) => live.pollers.inc({ reason }, delta),
    cacheDropped: (cause) => metrics.cacheDrops.inc({ cause }),
    cacheConfirmed: (result) => metrics.cacheConfirmations.inc({ result }),
    cacheWatching: (decision) => metrics.cacheWatching.inc({ decision }),
    livePollersLeading: (delta) => live.pollersLeading.inc(delta),
    livePolled(list, outcome, seconds) {
      live.polls.inc({ list, outcome });
      live.pollDuration.observe({ list }, seconds);
    },
    liveChanged: (list, kind) => live.changes.inc({ list, kind }),
    livePollStretch(factor, stretched) {
      if (stretched) live.intervalsStretched.inc();
      live.stretchFactor.set(factor);
    },
    liveSlowConsumerDropped: () => live.slowConsumersDropped.inc(),
    refused: (reason) => countRefusal(metrics, reason),
    liveRedisDropped: (reason) => live.redisDropped.inc({ reason }),
    upstreamRetry: (list, reason) => resilience.retries.inc({ list, reason }),
    upstreamFailFast: (reason) => resilience.failFast.inc({ reason }),
    bulkheadQueued: () => resilience.bulkheadQueued.inc(),
    bulkheadRejected: () => resilience.bulkheadRejected.inc(),
    breakerTransition(origin, state) {
      // Origins come from tokens' api_base claims: the label is bounded like the call metrics'.
      const label = originLabel(origin);
      resilience.breakerState.set({ origin: label }, BREAKER_STATE_VALUES[state]);
      resilience.breakerTransitions.inc({ origin: label, state });
    },
    upstreamCoalesced: (call) => metrics.upstreamCoalesced.inc({ list: call.list }),
    requestShared: () => metrics.requestsShared.inc(),
    async tokenRequest(_tenantId, run) {
      const started = performance.now();
      let ok = false;
      try {
        const result = await run();
        ok = true;
        return result;
      } finally {
        metrics.tokenDuration.observe({ outcome: ok ? 'ok' : 'error' }, (performance.now() - started) / 1000);
      }
    },
    tokenRequestEnded: (_tenantId, outcome) => metrics.tokenRequests.inc({ outcome }),
    requestEnded(record) {
      if (!record.cacheLookups) return;
      for (const [cache, { hits, misses }] of Object.entries(record.cacheLookups)) {
        if (hits > 0) metrics.cacheRequests.inc({ cache, result: 'hit' }, hits);
        if (misses > 0) metrics.cacheRequests.inc({ cache, result: 'miss' }, misses);
      }
    },
  };
}

/** Each refusal counter by its name (graphql/admission/refusals.ts names the counter of each reason). */
function refusalCounters(metrics: Metrics): ReadonlyMap<RefusalMetric, Counter<'reason'>> {
  return new Map<RefusalMetric, Counter<'reason'>>([
    ['wfs_graphql_requests_refused_total', metrics.requestsRefused],
    ['wfs_http_connections_refused_total', metrics.connectionsRefused],
    ['wfs_live_subscriptions_refused_total', metrics.live.refused],
  ]);
}

/** Counts a refusal on its reason's counter; a reason outside the table (a fault of ours) is not counted under a label no dashboard knows. */
function countRefusal(metrics: Metrics, reason: string): void {
  if (!(REFUSAL_REASONS as readonly string[]).includes(reason)) return;
  const { metric } = refusal(reason as RefusalReason);
  refusalCounters(metrics).get(metric)?.inc({ reason });
}
