import { UpstreamError, type UpstreamErrorCode } from '../errors';
import type { FailureCause } from '../failureCause';
import { describeNetworkError, MAX_BODY_BYTES } from '../transport/http';
import type { Resource, UpstreamRecord } from '../resources';

/**
 * The errors one page call can end with, each built in one place: the wording a client
 * reads and the details (status, Retry-After, cause, momentary) logs and metrics read.
 * Which status means which code is statusClass.ts's; these only build the error.
 */

/** Why a Retry-After failure happened: the window's cause, and whether only this caller's deadline made it fail. */
export interface WindowFailure {
  readonly cause?: FailureCause;
  readonly momentary?: boolean;
}

/** An answer whose status ends the call or is retried as a shard fault; `code` from `classifyStatus`. */
export function statusError(list: string, status: number, code: UpstreamErrorCode): UpstreamError {
  if (code === 'FORBIDDEN') return new UpstreamError(code, `the upstream refused access to ${list} (${status}): the tenant lacks a scope for it`, { status });
  return new UpstreamError(code, `the upstream answered ${status} for ${list}`, { status });
}

/** The tenant's 429s outlasted the retries, or its window is longer than the request may wait. */
export function rateLimited(tenantId: string, retryAfter: number | undefined, why: WindowFailure = {}): UpstreamError {
  return new UpstreamError('UPSTREAM_RATE_LIMITED', `the upstream is rate limiting tenant ${tenantId}; retry later`, {
    status: 429,
    ...(why.cause && { cause: why.cause }),
    ...(why.momentary && { momentary: true }),
    ...(retryAfter !== undefined && { retryAfterSeconds: retryAfter }),
  });
}

/** The shard's 503 window is longer than the request may wait, or its retries are spent. */
export function shardBusy(origin: string, list: string, retryAfter: number, why: WindowFailure = {}): UpstreamError {
  return new UpstreamError('UPSTREAM_UNAVAILABLE', `the upstream shard ${origin} is unavailable for ${list} (503); retry after ${retryAfter} s`, {
    status: 503,
    ...(why.cause && { cause: why.cause }),
    ...(why.momentary && { momentary: true }),
    retryAfterSeconds: retryAfter,
  });
}

/** No answer: the connection failed (a shard fault). */
export function unreachable(list: string, error: unknown): UpstreamError {
  return new UpstreamError('UPSTREAM_UNAVAILABLE', `the upstream could not be reached for ${list} (${describeNetworkError(error)})`);
}

/** A 200 whose body broke off (a shard fault). */
export function unreadable(list: string, error: unknown): UpstreamError {
  return new UpstreamError('UPSTREAM_UNAVAILABLE', `the ${list} response could not be read (${describeNetworkError(error)})`);
}

/** The attempt's own timeout, or the deadlines of everyone waiting on it, ran out (a shard fault). */
export function outOfTime(list: string): UpstreamError {
  return new UpstreamError('UPSTREAM_UNAVAILABLE', `the upstream did not answer the ${list} call in time`, { cause: 'timeout' });
}

/** Everyone waiting on the call went away: no verdict on the shard, and no answer to hand to others. */
export function cancelled(list: string): UpstreamError {
  return new UpstreamError('UPSTREAM_UNAVAILABLE', `the ${list} call was cancelled`, { momentary: true });
}

/** A body over `MAX_BODY_BYTES`: a bad response, not worth a retry. */
export function tooLarge(list: string): UpstreamError {
  return new UpstreamError('UPSTREAM_BAD_RESPONSE', `the ${list} response is larger than ${MAX_BODY_BYTES} bytes`);
}

/** The tenant's token does not grant the scope the list needs: no call is made. */
export function scopeMissing(resource: Resource<UpstreamRecord>, scope: string): UpstreamError {
  return new UpstreamError('FORBIDDEN', `reading ${resource.name} needs the scope "${scope}", which was not granted to this tenant`);
}
