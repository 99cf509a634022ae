import type { UpstreamError } from '../errors';
import type { RetryReason } from '../observer';
import type { RetrySchedule } from '../resilience/retry';
import type { WindowCheck } from '../resilience/retryAfterWindows';
import type { UnauthorizedRule } from '../token/unauthorized';
import { rateLimited, shardBusy, type WindowFailure } from './callErrors';

/**
 * The retry decisions of one page call, as functions from what happened to what to do
 * next: the request loop (upstream/client.ts) reads them and does it. They keep no
 * state of their own; the count of Retry-After retries is the call's (`Tries`).
 */

/** What one page call keeps from try to try (`WfsClient` makes one per shared call). */
export interface Tries {
  /** The longest Retry-After wait, in ms, taken within a request. */
  readonly maxWaitMs: number;
  /** Ms left before the latest deadline of the call's callers. */
  readonly remaining: () => number;
  /** Backoff of transient faults. */
  readonly transient: RetrySchedule;
  /** Backoff of 429s without Retry-After. */
  readonly rateLimitBackoff: RetrySchedule;
  /** 429s and 503s with Retry-After retried so far, and at most (`maxRateLimitRetries`). */
  rateLimitRetries: number;
  readonly maxRateLimitRetries: number;
  readonly unauthorized: UnauthorizedRule;
}

/** What a step decided after an answer that was no page: try again at once, after a wait (a retry of `reason`), or give up with `fail`. */
export type NextTry = 'now' | { readonly waitMs: number; readonly reason: RetryReason } | { readonly fail: UpstreamError };

/** A 429 without Retry-After: a jittered backoff while retries are left. */
export function afterRateLimit(tries: Tries, tenantId: string): NextTry {
  const wait = tries.rateLimitRetries < tries.maxRateLimitRetries ? tries.rateLimitBackoff.next(tries.remaining()) : undefined;
  if (wait === undefined) return { fail: rateLimited(tenantId, undefined) };
  tries.rateLimitRetries += 1;
  return { waitMs: wait, reason: 'rate-limited' };
}

/** A shard fault without Retry-After (network error, timeout, 5xx): a jittered backoff, unless the callers went away. */
export function afterShardFault(tries: Tries, error: UpstreamError, callersGone: boolean): NextTry {
  const wait = callersGone ? undefined : tries.transient.next(tries.remaining());
  if (wait === undefined) return { fail: error };
  return { waitMs: wait, reason: 'transient' };
}

/**
 * A Retry-After answer (a tenant's 429, a shard's 503) whose window was opened for
 * `keptSeconds`: the window step waits it out (`now`), or the call fails at once
 * (`refusal`) when the retries are spent, the wait is longer than a request may take,
 * or past the caller's deadline.
 */
export function afterRetryAfter(tries: Tries, keptSeconds: number, refusal: (why: WindowFailure) => UpstreamError): NextTry {
  const wait = keptSeconds * 1000;
  const retriesLeft = tries.rateLimitRetries < tries.maxRateLimitRetries;
  if (!retriesLeft || wait > tries.maxWaitMs || wait >= tries.remaining()) {
    // A wait we would have taken with more time left is this caller's moment, not the upstream's answer.
    return { fail: refusal({ momentary: retriesLeft && wait <= tries.maxWaitMs }) };
  }
  tries.rateLimitRetries += 1;
  return 'now'; // the window step waits it out
}

/** Where a call goes: the keys of its windows, and the words of their refusals. */
export interface WindowKeys {
  readonly tenantId: string;
  readonly origin: string;
  readonly list: string;
}

/**
 * What the tenant's and the shard's Retry-After windows say before an attempt: go, wait
 * `waitMs` within the request, or fail fast. Another caller's probe under way decides
 * for everyone (1 s is our advice meanwhile).
 */
export function throughWindows(tenant: WindowCheck, shard: WindowCheck, keys: WindowKeys, tries: Tries): 'go' | Exclude<NextTry, 'now'> {
  const tenantWait = tenant.kind === 'wait' ? tenant.remainingMs : tenant.kind === 'probing' ? Infinity : 0;
  const shardWait = shard.kind === 'wait' ? shard.remainingMs : shard.kind === 'probing' ? Infinity : 0;
  const waitMs = Math.max(tenantWait, shardWait);
  if (waitMs === 0) return 'go';
  if (waitMs <= tries.maxWaitMs && waitMs < tries.remaining()) return { waitMs, reason: 'retry-after' };
  const seconds = (ms: number) => (ms === Infinity ? 1 : Math.ceil(ms / 1000));
  // A wait we would have taken with more time left (or another caller's probe under way) is this caller's moment, not the upstream's answer.
  const why = { cause: 'retry_after_window' as const, momentary: waitMs <= tries.maxWaitMs };
  return { fail: tenantWait >= shardWait ? rateLimited(keys.tenantId, seconds(tenantWait), why) : shardBusy(keys.origin, keys.list, seconds(shardWait), why) };
}
