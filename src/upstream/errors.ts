import type { FailureCause } from './failureCause';

/**
 * Every failure on the REST side is an UpstreamError with a code from one union.
 * The GraphQL layer maps the code to `extensions.code`; tests assert on codes, not
 * on messages. Messages say what happened and what to do, and never carry a secret
 * or a token.
 */
export type UpstreamErrorCode =
  /** The upstream could not be reached, timed out, or answered 5xx. */
  | 'UPSTREAM_UNAVAILABLE'
  /** The upstream kept answering 429 after the bounded retries. */
  | 'UPSTREAM_RATE_LIMITED'
  /** The token endpoint refused our credentials, or a fresh token got 401 again. */
  | 'UPSTREAM_UNAUTHORIZED'
  /** The upstream answered with something that is not the documented shape. */
  | 'UPSTREAM_BAD_RESPONSE'
  /** The token is bound to another tenant, or its api_base is refused. */
  | 'UPSTREAM_MISCONFIGURED'
  /** The tenant lacks the scope the call needs (403, or not granted in the token). */
  | 'FORBIDDEN';

export interface UpstreamErrorDetails {
  readonly status?: number;
  readonly retryAfterSeconds?: number;
  /** `cause`: why, from failureCause.ts, for logs and metrics (a mechanism that refuses a call sets it). */
  readonly cause?: FailureCause;
  /**
   * The failure says more about the moment and the caller than about the upstream: a
   * bulkhead that was full, a token wait or a Retry-After window longer than what was
   * left of this caller's deadline, a cancelled call. Another caller with another
   * deadline, a moment later, may well succeed, so such an answer is not handed to
   * identical requests that joined this one (src/http/sharedRequests.ts).
   */
  readonly momentary?: boolean;
}

export class UpstreamError extends Error {
  override readonly name = 'UpstreamError';

  constructor(
    readonly code: UpstreamErrorCode,
    message: string,
    readonly details: UpstreamErrorDetails = {},
  ) {
    super(message);
  }
}

/** The error of a call its caller gave up on (the request went away or its deadline passed). */
export function cancelledError(): UpstreamError {
  return new UpstreamError('UPSTREAM_UNAVAILABLE', 'the upstream call was cancelled or timed out', { momentary: true });
}

export function isUpstreamError(error: unknown): error is UpstreamError {
  return error instanceof UpstreamError;
}
