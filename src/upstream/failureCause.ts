/**
 * Why an upstream call failed, as a small closed set: the `cause` of the
 * "upstream call failed" log line and the `outcome` label of
 * `wfs_upstream_calls_total`. Logs and alerts switch on these names, so they are
 * fixed strings; a new mechanism adds its name here and sets it on the errors it
 * throws (`new UpstreamError(code, message, { cause: 'breaker_open' })`), and that
 * is all: the logging and the metrics pick it up from `details.cause`.
 */
export const FAILURE_CAUSES = [
  /** The upstream answered a status we do not retry, or kept answering one (the status is logged beside). */
  'http_status',
  /** A connect, headers or body timeout, or the call's or request's deadline. */
  'timeout',
  /** The connection was reset or closed mid-exchange. */
  'reset',
  /** Nothing listens on the shard's port (ECONNREFUSED). */
  'refused',
  /** The TLS handshake or the certificate failed. */
  'tls',
  /** The shard's host name did not resolve. */
  'dns',
  /** The shard's address (the token's api_base, or what it resolves to) was refused by our checks. */
  'address_refused',
  /** No usable token: the token endpoint failed or refused (its own log line says why). */
  'token',
  /** The tenant lacks the scope for this list (from the token, before any call). */
  'scope_missing',
  /** 200 with a body that is not the documented envelope, or a body too large. */
  'bad_response',
  /** The page chain loops or runs past the page limit. */
  'broken_page_chain',
  /** Not sent: the shard's circuit breaker is open. */
  'breaker_open',
  /** Not sent: the request's budget of upstream calls is spent. */
  'call_budget_spent',
  /** Not sent: the shard asked us (Retry-After) to wait longer than a request can. */
  'retry_after_window',
  /** Any other network error. */
  'network',
] as const;

export type FailureCause = (typeof FAILURE_CAUSES)[number];

/** What one attempt or one whole call came to: ok, a failure cause, or the caller went away. */
export type CallOutcome = 'ok' | 'aborted' | FailureCause;

export function isFailureCause(value: unknown): value is FailureCause {
  return typeof value === 'string' && (FAILURE_CAUSES as readonly string[]).includes(value);
}

/**
 * The cause of a network error from undici (or an abort), by its documented codes.
 * `signal` is the call's signal: when it fired, the reason decides between our own
 * deadline (TimeoutError) and a caller that went away (anything else).
 */
export function causeOfNetworkError(error: unknown, signal?: AbortSignal): CallOutcome {
  if (signal?.aborted) return isTimeoutReason(signal.reason) ? 'timeout' : 'aborted';
  const explicit = (error as { cause?: unknown } | null)?.cause;
  const code = errorCode(error) ?? errorCode(explicit);
  if (!code) return (error as Error | null)?.name === 'TimeoutError' ? 'timeout' : 'network';
  if (code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE') return 'bad_response';
  if (code === 'WFS_ADDRESS_REFUSED') return 'address_refused';
  if (/TIMEOUT|TIMEDOUT/.test(code)) return 'timeout';
  if (code === 'ECONNREFUSED') return 'refused';
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'UND_ERR_SOCKET' || code === 'UND_ERR_CLOSED') return 'reset';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_FAIL' || code === 'EAI_NONAME') return 'dns';
  if (/^ERR_TLS|^ERR_SSL|CERT|^EPROTO$|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code)) return 'tls';
  return 'network';
}

export function isTimeoutReason(reason: unknown): boolean {
  return (reason as { name?: unknown } | null)?.name === 'TimeoutError';
}

function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

