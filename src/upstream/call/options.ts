import type { Dispatcher } from 'undici';
import { NUMERIC_SETTINGS } from '../../config';
import type { PageRef } from '../pageReference';
import type { Observer } from '../observer';
import type { TokenCache } from '../token/tokenCache';
import type { ShardBreakerOptions } from '../resilience/breaker';
import type { TenantBulkheadOptions } from '../resilience/bulkhead';
import { DEFAULT_UPSTREAM_CALL_BUDGET, type CallBudget } from '../resilience/callBudget';
import type { RetryPolicyOptions } from '../resilience/retry';

/*
 * What the client (upstream/client.ts) is built with, and what one page call asks for.
 * The client re-exports these: import them from there.
 */

/** Which page of a list to fetch, and for which request. */
export interface ListPageOptions {
  /** The page reference; `null` or absent: the first page. */
  readonly ref?: PageRef | null;
  /** Sent as `page_size` unless the reference carries its own. Default UPSTREAM_PAGE_SIZE. */
  readonly pageSize?: number;
  /** Query parameters the resource passes upstream (`Resource.upstreamQuery`), on the first page; references carry their own. */
  readonly query?: Readonly<Record<string, string>>;
  /** The GraphQL request's signal (it is gone, or its deadline passed). Default: the budget's. */
  readonly signal?: AbortSignal;
  /** The request's upstream call budget and deadline; see `WfsClient.budgetFor`. */
  readonly budget?: CallBudget;
}

/** The client's defaults, each spelled here only (the settings of src/config/ keep theirs there). */
export const CLIENT_DEFAULTS = {
  maxRateLimitRetries: 2,
  maxRetryAfterSeconds: 2,
  deadlineMs: 10_000,
  attemptTimeoutMs: NUMERIC_SETTINGS.WFS_UPSTREAM_ATTEMPT_TIMEOUT_MS.default,
  callBudget: DEFAULT_UPSTREAM_CALL_BUDGET,
} as const;

export interface WfsClientOptions {
  readonly tokens: TokenCache;
  readonly dispatcher: Dispatcher;
  /** 429 retries before UPSTREAM_RATE_LIMITED. Default: CLIENT_DEFAULTS. */
  readonly maxRateLimitRetries?: number;
  /** The longest Retry-After, in seconds, we wait for in-request; longer fails at once. Default: CLIENT_DEFAULTS. */
  readonly maxRetryAfterSeconds?: number;
  /** Deadline in ms of a call made without a budget (a budget carries the request's own). Default: CLIENT_DEFAULTS. */
  readonly deadlineMs?: number;
  /**
   * How long, in ms, one HTTP attempt may take (`WFS_UPSTREAM_ATTEMPT_TIMEOUT_MS`);
   * an attempt that runs out of it counts against the shard's breaker. Default: its value in src/config/.
   */
  readonly attemptTimeoutMs?: number;
  /** The longest shard (503) Retry-After window kept, in seconds (`WFS_SHARD_RETRY_AFTER_MAX_S`). Default: its value in src/config/. */
  readonly shardRetryAfterMaxSeconds?: number;
  /** The longest tenant (429) Retry-After window kept, in seconds (`WFS_TENANT_RETRY_AFTER_MAX_S`). Default: its value in src/config/. */
  readonly tenantRetryAfterMaxSeconds?: number;
  /** Upstream page calls one GraphQL request may make (`WFS_UPSTREAM_CALL_BUDGET`). Default: its value in src/config/. */
  readonly callBudget?: number;
  readonly retry?: RetryPolicyOptions;
  readonly breaker?: Omit<ShardBreakerOptions, 'onStateChange' | 'onFailFast'>;
  readonly bulkhead?: Omit<TenantBulkheadOptions, 'onQueued' | 'onRejected'>;
  /** What the client reports (calls, attempts, retries, breaker and bulkhead events); default: nothing. */
  readonly observer?: Observer;
  /** Clock for Retry-After windows. Default Date.now. */
  readonly now?: () => number;
}

/** The per-key structures the client keeps, by size (tests check they stay bounded). */
export interface ClientFootprint {
  readonly breakers: number;
  readonly windows: number;
  readonly bulkheads: number;
  readonly inFlight: number;
}
