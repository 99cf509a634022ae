/**
 * The moments the token cache (tokenCache.ts) acts on, each named and reasoned here
 * (docs/upstream.md, "Token lifetime" and "Token endpoint faults"): until when a token
 * is used (`usableUntil`), from when it is refreshed ahead of need (`refreshFrom`), how
 * long after a failed token request no other is sent (`failureWindowMs`), and how long a
 * query without a usable token waits on one (`waitLimitMs`).
 */
import type { UpstreamError } from '../errors';
import type { TokenGrant } from './tokenEndpoint';

/** At most this much of a token's life, in ms, is given up as safety margin. */
const MAX_EXPIRY_MARGIN_MS = 30_000;
/** The share of a token's life after which a request triggers a background refresh. */
const REFRESH_AHEAD_FRACTION = 0.75;

/**
 * When a token stops being used: shortly before `expiresAt`, by a margin that
 * shrinks with short lifetimes (10% of the life, at most 30 s), so a 4 s token is
 * still used for 3.6 s and a 900 s token for 870 s.
 */
export function usableUntil(grant: TokenGrant): number {
  const life = grant.expiresAt - grant.obtainedAt;
  return grant.expiresAt - Math.min(MAX_EXPIRY_MARGIN_MS, life * 0.1);
}

/** When a background refresh starts, so no request has to wait for the token endpoint. */
export function refreshFrom(grant: TokenGrant): number {
  return grant.obtainedAt + (grant.expiresAt - grant.obtainedAt) * REFRESH_AHEAD_FRACTION;
}

/**
 * Backoff, in ms, between token requests after transient failures (5xx, timeouts,
 * unusable answers). It grows to `max` while a still-usable token serves the queries,
 * but only to `maxWhileWaiting` while the company has none: its queries are failing,
 * and the endpoint's recovery must reach them within seconds.
 */
export const TOKEN_BACKOFF_MS = { first: 1_500, max: 15_000, maxWhileWaiting: 4_000 } as const;
/** The token endpoint refused our credentials or gave an unusable binding: ms before asking again. */
const REFUSED_CREDENTIALS_MS = 10_000;
/** The longest Retry-After from the token endpoint we honour, in ms (a hostile value must not lock a tenant out for days). */
const MAX_RETRY_AFTER_MS = 300_000;

/**
 * How long, in ms, after a failed token request no other is sent: the endpoint's
 * Retry-After (429 or 503) when it gave one, a fixed wait when it refused our
 * credentials, otherwise an exponential backoff from 1.5 s to 15 s (to 4 s when
 * `waiting`: the company has no usable token).
 */
export function failureWindowMs(error: UpstreamError, failedAttempts: number, waiting: boolean): number {
  const max = waiting ? TOKEN_BACKOFF_MS.maxWhileWaiting : TOKEN_BACKOFF_MS.max;
  const backoff = Math.min(max, TOKEN_BACKOFF_MS.first * 2 ** Math.max(0, failedAttempts - 1));
  if (error.details.retryAfterSeconds !== undefined) return Math.max(backoff, Math.min(MAX_RETRY_AFTER_MS, error.details.retryAfterSeconds * 1000));
  switch (error.code) {
    case 'UPSTREAM_UNAUTHORIZED':
    case 'UPSTREAM_MISCONFIGURED':
    case 'FORBIDDEN':
      return REFUSED_CREDENTIALS_MS;
    case 'UPSTREAM_RATE_LIMITED':
      return Math.max(backoff, 5_000);
    default:
      return backoff;
  }
}

/**
 * A query without a usable token waits on a token request at most this factor times
 * the slowest of the endpoint's recent answers, and never less than `MIN_WAIT_MS`;
 * after a failed attempt, at most `RETRY_WAIT_MS`.
 */
const WAIT_FACTOR = 3;
const MIN_WAIT_MS = 1_000;
const RETRY_WAIT_MS = 1_000;
/** How many of the endpoint's recent answer times are remembered (`answerTimes`). */
export const ANSWER_HISTORY = 5;

/**
 * How long, in ms from its start, a query may wait on a token request: about a
 * second after a failed attempt, otherwise a few times the endpoint's recent
 * answers (at least a second). Undefined with no history: a cold tenant waits for
 * the request itself, so a slow but working endpoint still serves its first query.
 */
export function waitLimitMs(failedAttempts: number, answerTimes: readonly number[]): number | undefined {
  if (failedAttempts > 0) return RETRY_WAIT_MS;
  if (answerTimes.length === 0) return undefined;
  return Math.max(MIN_WAIT_MS, WAIT_FACTOR * Math.max(...answerTimes));
}
