import type { BreakerState } from './resilience/breaker';
import type { CallOutcome } from './failureCause';

/**
 * What the domain reports about itself: the one interface between the code that does
 * the work (`upstream/`, `graphql/`) and the code that watches it (metrics, logs,
 * OpenTelemetry spans). The domain imports this file and nothing else of
 * `observability/`; `observability/index.ts` builds one `Observer` at start-up from
 * the adapters in use and hands it to the client, the token cache and the per-request
 * data layer through their options.
 *
 * Two kinds of members. Events (`upstreamAttempt`, `cacheLookup`, …) say that
 * something happened and return nothing. Scopes (`upstreamCall`, `tokenRequest`,
 * `entityLookup`; see SCOPES) run the work they are about, so that an adapter can
 * time it, count its outcome once, or open a span its inner calls hang under; they
 * must return what `run` returns and rethrow what it throws.
 *
 * Nothing an event carries is secret: names, ids, origins, codes and counts, never a
 * token, client secret, cursor or header value.
 */
export interface Observer {
  /** One upstream list call as a whole: every attempt, retry and wait of it. */
  upstreamCall<T>(call: UpstreamCall, run: () => Promise<T>): Promise<T>;
  /** An HTTP attempt of `call` ended (`status` 0: a network error or timeout). */
  upstreamAttempt(call: UpstreamCall, attempt: UpstreamAttempt): void;
  /** The shard `call` goes to (the token's `api_base`, an origin), once the token is known. */
  upstreamShard(call: UpstreamCall, apiBase: string): void;
  /** `call` is answered by an identical call already in flight (possibly another request's). */
  upstreamCoalesced(call: UpstreamCall): void;
  /** A call is tried again, and why. */
  upstreamRetry(list: string, reason: RetryReason): void;
  /** A page call refused without calling the upstream, and why. */
  upstreamFailFast(reason: FailFastReason): void;
  /** A call waited because its tenant's concurrency limit was reached. */
  bulkheadQueued(): void;
  /** A call was refused because its tenant's bulkhead queue was full. */
  bulkheadRejected(): void;
  /** A shard's circuit breaker changed state. */
  breakerTransition(origin: string, state: BreakerState): void;

  /** One request to the token endpoint for a tenant (only those actually sent). */
  tokenRequest<T>(tenantId: string, run: () => Promise<T>): Promise<T>;
  /** How a token request ended: `ok` or the error code, with the error when it failed. */
  tokenRequestEnded(tenantId: string, outcome: string, error?: TokenRequestError): void;

  /** A GraphQL request took the answer of an identical one in flight instead of executing (src/http/sharedRequests.ts). */
  requestShared(): void;
  /** The request being served turned out to be `tenantId`'s. */
  tenantIdentified(tenantId: string): void;
  /** Lookups in one of the caches, for the request being served. */
  cacheLookup(cache: CacheName, hits: number, misses: number): void;
  /** A company's index of a list, holding something, dropped it: its lifetime `expired`, or a poll saw the list `changed` (docs/caching.md). */
  cacheDropped(cause: 'expired' | 'changed'): void;
  /** A poll that saw no change checked what an index held of the list: `extended` for another lifetime, or `unconfirmed` (it expires as it would have). */
  cacheConfirmed(result: 'extended' | 'unconfirmed'): void;
  /** The watching choice (live/watch.ts) for a company's list: it `started` or `stopped` watching, or a bound `refused` it. */
  cacheWatching(decision: 'started' | 'stopped' | 'refused'): void;
  /** A batch of `ids` looked up in a tenant's entity index (the loader's; one record the index holds is answered without one). */
  entityLookup<T>(ids: number, run: () => Promise<T>): Promise<T>;
  /** Within `entityLookup`: `hit`, every id was in the index; `scan`, list pages had to be read. */
  entityLookupResult(result: 'hit' | 'scan'): void;

  /** Live updates (src/live/): open subscriptions of `list` on this replica went up (1) or down (-1). */
  liveSubscriptions(list: string, delta: number): void;
  /** A poller (one per company and list) started (1) or stopped (-1) on this replica, or moved between reasons (-1 from one, 1 to the other). */
  livePollers(reason: PollerReason, delta: number): void;
  /** Pollers that poll the upstream (hold the lease, or no Redis) rather than hear another replica, up or down. */
  livePollersLeading(delta: number): void;
  /** One poll (a walk of a list) ended: `ok`, `error` (tried again next interval) or `fatal` (its subscriptions end). */
  livePolled(list: string, outcome: LivePollOutcome, seconds: number): void;
  /** A change found by a poll or heard from another replica, once per poller (not per subscriber). */
  liveChanged(list: string, kind: 'ADDED' | 'UPDATED' | 'REMOVED'): void;
  /** The largest stretch of any company's poll intervals now (1: the poll budget holds); `stretched`: a delay was stretched by it. */
  livePollStretch(factor: number, stretched: boolean): void;
  /** A subscription or connection dropped because its client did not read fast enough. */
  liveSlowConsumerDropped(): void;
  /**
   * A request, connection or subscription refused, on any transport, by its reason: one
   * of graphql/admission/refusals.ts's RefusalReason (a string here: the port sits below
   * graphql/; the metrics adapter counts each on its metric by that table).
   */
  refused(reason: string, transport?: string): void;
  /** A live-update message or poll lease read from Redis was dropped (live/redisCoordinator.ts): oversized, unsealed, forged, malformed, replayed, lease, unpublishable. */
  liveRedisDropped(reason: string): void;
}

export type LivePollOutcome = 'ok' | 'error' | 'fatal';

/** Why a poller runs: its list has live subscribers here, is watched for queries (live/watch.ts), or both. */
export type PollerReason = 'subscribers' | 'watched' | 'both';

/** The members of `Observer` that run the work they are about (see above). */
export const SCOPES = ['upstreamCall', 'tokenRequest', 'entityLookup'] as const;

/** One list call, as its events name it; the same object in every event of the call. */
export interface UpstreamCall {
  readonly tenantId: string;
  readonly list: string;
  readonly pageSize: number;
  /** The caller's signal (its request is over when it aborts). */
  readonly signal: AbortSignal | undefined;
}

/** One HTTP attempt: never a path, query, cursor or token. */
export interface UpstreamAttempt {
  readonly status: number;
  readonly durationMs: number;
  /** Scheme, host and port of the shard. */
  readonly origin: string;
  readonly outcome: CallOutcome;
  /**
   * An attempt of a shared call, reported again to a request that joined the call
   * when that request's call ends: it belongs in that request's record (its failure
   * line), but it is not another upstream request (count it once, when not `shared`).
   */
  readonly shared?: true;
}

export type RetryReason = 'transient' | 'rate-limited' | 'retry-after' | 'unauthorized';
export type FailFastReason = 'breaker' | 'retry-after' | 'bulkhead' | 'budget';

/** The caches whose hits are counted: a closed set, so the `cache` label stays small. */
export type CacheName =
  /** The same page asked for twice within one GraphQL request. */
  | 'request_pages'
  /** Entity lookups answered by the short-lived per-tenant index. */
  | 'entity_index'
  /** List pages served again from memory within the freshness window (docs/caching.md). */
  | 'kept_pages'
  /** Answers served again whole, before Apollo Server runs (cache/answers.ts, docs/caching.md). */
  | 'whole_answers';

/**
 * What is recorded of one GraphQL request: its id for the logs, whether the client
 * went away, and the tallies of its debug line. Made by the observability layer when
 * the request arrives and handed to its GraphQL context; the observers fill it in.
 */
export interface RequestRecord {
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
   * Lookups per cache, added to `wfs_cache_requests_total` once when the request ends:
   * one counter update per cache and result instead of one per record looked up
   * (prom-client builds a label key on every update).
   */
  cacheLookups?: Partial<Record<CacheName, { hits: number; misses: number }>>;
}

/** What a failed token request tells its observers: a code and a message that names no secret. */
export interface TokenRequestError {
  readonly code: string;
  readonly message: string;
}

/** Watches nothing: the default of every option that takes an observer. */
export const NO_OBSERVER: Observer = {
  upstreamCall: (_call, run) => run(),
  upstreamAttempt() {},
  upstreamShard() {},
  upstreamCoalesced() {},
  requestShared() {},
  upstreamRetry() {},
  upstreamFailFast() {},
  bulkheadQueued() {},
  bulkheadRejected() {},
  breakerTransition() {},
  tokenRequest: (_tenantId, run) => run(),
  tokenRequestEnded() {},
  tenantIdentified() {},
  cacheLookup() {},
  cacheDropped() {},
  cacheConfirmed() {},
  cacheWatching() {},
  entityLookup: (_ids, run) => run(),
  entityLookupResult() {},
  liveSubscriptions() {},
  livePollers() {},
  livePollersLeading() {},
  livePolled() {},
  liveChanged() {},
  livePollStretch() {},
  liveSlowConsumerDropped() {},
  refused() {},
  liveRedisDropped() {},
};
