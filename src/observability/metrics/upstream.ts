/**
 * The upstream's metrics: the HTTP attempts to each shard and the list calls after their
 * retries (counted by upstreamObserver.ts), the token endpoint and the shared token
 * store, and the client's resilience (breaker, retries, bulkhead, fail-fast refusals).
 * A shard is labelled by its origin, a bounded set (boundedLabel.ts); never a tenant.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { UpstreamErrorCode } from '../../upstream/errors';
import { RESOURCES } from '../../upstream/resources';
import { LATENCY_BUCKETS } from './buckets';

/**
 * Every outcome of a token request (`wfs_token_requests_total{outcome}`): `ok`, or the code
 * requestToken's error carries (tokenEndpoint.ts; anything else counts as
 * UPSTREAM_UNAVAILABLE). The alerts read it in two parts: the endpoint's own failures
 * (UNAVAILABLE: unreachable, timed out, 5xx; RATE_LIMITED: 429; BAD_RESPONSE: no token
 * response) page, one tenant's refusal (UNAUTHORIZED: 400/401/403) or unusable token
 * (MISCONFIGURED) opens a ticket.
 */
const TOKEN_REQUEST_OUTCOMES = ['ok', 'UPSTREAM_UNAVAILABLE', 'UPSTREAM_RATE_LIMITED', 'UPSTREAM_BAD_RESPONSE', 'UPSTREAM_UNAUTHORIZED', 'UPSTREAM_MISCONFIGURED'] as const satisfies ReadonlyArray<'ok' | UpstreamErrorCode>;

export interface UpstreamCallMetrics {
  /** Each HTTP attempt to a shard, by list, shard origin and status (0: network error); client aborts are not counted. */
  readonly upstreamRequests: Counter<'list' | 'origin' | 'status'>;
  readonly upstreamDuration: Histogram<'list' | 'origin'>;
  /** Each list call once, after its retries: `ok`, `aborted` or a failure cause (failureCause.ts). */
  readonly upstreamCalls: Counter<'list' | 'origin' | 'outcome'>;
  readonly upstreamCoalesced: Counter<'list'>;
}

export interface TokenMetrics {
  readonly tokenRequests: Counter<'outcome'>;
  readonly tokenDuration: Histogram<'outcome'>;
  /** 1 while the shared token store (Redis) answers, 0 while it does not; no sample without Redis. What is stored in it does not move it. */
  readonly sharedTokenStoreUp: Gauge<'store'>;
  /** Values in the shared token store refused as token records or refresh locks, by reason (seal, shape, size: tokenRecord.ts). */
  readonly sharedTokenStoreRejected: Counter<'reason'>;
}

/** The upstream call metrics: HTTP attempts per shard, their duration, calls after retries, coalesced calls (each list's from zero). */
export function createUpstreamCallMetrics(registers: Registry[]): UpstreamCallMetrics {
  const metrics: UpstreamCallMetrics = {
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
  for (const { name: list } of RESOURCES) metrics.upstreamCoalesced.inc({ list }, 0);
  return metrics;
}

/** The token metrics: token endpoint requests (every outcome from zero) and their duration, the shared token store's health and refused records. */
export function createTokenMetrics(registers: Registry[]): TokenMetrics {
  const metrics: TokenMetrics = {
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
  // From zero, so a tenant's first refused token is an increase WfsSubgraphTokensRefused sees.
  for (const outcome of TOKEN_REQUEST_OUTCOMES) metrics.tokenRequests.inc({ outcome }, 0);
  return metrics;
}

/** Upstream resilience (breaker, retries, bulkhead, fail-fast refusals), fed by the client's events (metricsObserver.ts). */
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

export function createResilienceMetrics(registers: Registry[]): ResilienceMetrics {
  return {
    breakerState: new Gauge({
      name: 'wfs_upstream_breaker_state',
      help: 'Circuit breaker state per upstream shard origin (0 closed, 1 open, 2 half-open)',
      labelNames: ['origin'],
      registers,
    }),
    breakerTransitions: new Counter({
      name: 'wfs_upstream_breaker_transitions_total',
      help: 'Circuit breaker state changes per upstream shard origin, by the state entered',
      labelNames: ['origin', 'state'],
      registers,
    }),
    retries: new Counter({
      name: 'wfs_upstream_retries_total',
      help: 'Upstream call retries, by list and reason (transient, rate-limited, retry-after, unauthorized)',
      labelNames: ['list', 'reason'],
      registers,
    }),
    bulkheadQueued: new Counter({
      name: 'wfs_upstream_bulkhead_queued_total',
      help: "Upstream calls that waited because their tenant's concurrency limit was reached",
      registers,
    }),
    bulkheadRejected: new Counter({
      name: 'wfs_upstream_bulkhead_rejected_total',
      help: "Upstream calls refused because their tenant's bulkhead queue was full",
      registers,
    }),
    failFast: new Counter({
      name: 'wfs_upstream_fail_fast_total',
      help: 'Page calls refused without calling the upstream, by reason (breaker, retry-after, bulkhead, budget)',
      labelNames: ['reason'],
      registers,
    }),
  };
}
