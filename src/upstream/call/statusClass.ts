import type { UpstreamErrorCode } from '../errors';

/**
 * What one HTTP status of a page call means, before any body is read: the one place
 * that says "502 means X". Status codes decide; error bodies are undocumented and
 * never read (docs/upstream.md, "Error bodies").
 */
export type StatusClass =
  /** 200: read the body as the list envelope. */
  | { readonly kind: 'ok' }
  /** 401: the token is no longer accepted; renew it once (token/unauthorized.ts). */
  | { readonly kind: 'unauthorized' }
  /** 429: the tenant is rate limited; its Retry-After opens the tenant's window. */
  | { readonly kind: 'rate-limited'; readonly retryAfterSeconds: number | undefined }
  /** 5xx: the shard is failing; retried, and counted by the shard's breaker. A 503's Retry-After opens the shard's window. */
  | { readonly kind: 'shard-fault'; readonly code: UpstreamErrorCode; readonly retryAfterSeconds: number | undefined }
  /** Anything else ends the call at once with `code`: 403 is a missing scope, any other status not the documented API. */
  | { readonly kind: 'failed'; readonly code: UpstreamErrorCode };

/** The class of `status`; `retryAfterSeconds` is the answer's parsed Retry-After, kept where it means something. */
export function classifyStatus(status: number, retryAfterSeconds: number | undefined): StatusClass {
  if (status === 200) return { kind: 'ok' };
  if (status === 401) return { kind: 'unauthorized' };
  if (status === 429) return { kind: 'rate-limited', retryAfterSeconds };
  if (status === 403) return { kind: 'failed', code: 'FORBIDDEN' };
  // 503 with Retry-After is the shard asking for a pause, like a 429 for the whole shard.
  if (status >= 500) return { kind: 'shard-fault', code: 'UPSTREAM_UNAVAILABLE', retryAfterSeconds: status === 503 ? retryAfterSeconds : undefined };
  return { kind: 'failed', code: 'UPSTREAM_BAD_RESPONSE' };
}
