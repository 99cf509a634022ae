import { isUpstreamError, type UpstreamError } from '../upstream/errors';
import { isTimeoutReason, type CallOutcome, type FailureCause } from '../upstream/failureCause';
import { BoundedLabel } from './boundedLabel';
import type { Observer, UpstreamAttempt, UpstreamCall } from '../upstream/observer';
import type { Logger } from './logger';
import { LogLimiter, type LogLimiterOptions } from './logLimiter';
import type { Metrics } from './metrics';
import { currentRequest } from './requestScope';

/** What one list call went through, filled by its attempt events while the call runs. */
interface CallRecord {
  attempts: number;
  origin: string | undefined;
  lastOutcome: CallOutcome | undefined;
  lastStatus: number;
}

/** The fields of the "upstream call failed" line; never a path, query, cursor or token. */
export interface UpstreamFailure {
  readonly tenantId: string | undefined;
  /** The list called; for a failure found after the calls (a broken page chain), the GraphQL field's path instead. */
  readonly list?: string;
  readonly path?: string;
  /** Scheme, host and port of the shard; `none` when no attempt reached one. */
  readonly origin: string;
  readonly cause: FailureCause;
  /** The last HTTP status, when the cause is `http_status`. */
  readonly status?: number;
  /** The error code the GraphQL client sees. */
  readonly code: string;
  /** The error's own message: shard host, refused address, upstream path. The client gets only a sentence (graphql/errors.ts). */
  readonly detail?: string;
  readonly attempts: number;
  readonly durationMs: number;
}

export interface UpstreamObserver extends Pick<Observer, 'upstreamCall' | 'upstreamAttempt'> {
  /** Logs a failure that did not come out of one call (a broken page chain), unless already logged. */
  logFailure(error: UpstreamError, fields: { path?: string }): void;
  /** The `origin` label value of a shard: the same bounded set as the call metrics (the breaker metrics use it too). */
  originLabel(origin: string): string;
  /** Writes the counts of suppressed lines now (the timer does it every window). */
  flush(): void;
  close(): void;
}

/**
 * One warn line per upstream call that finally failed, bounded per shard, list and
 * cause by a LogLimiter, and the per-shard call metrics. The request id and trace id
 * come from the logger's mixin, the tenant from the call itself.
 */
export function createUpstreamObserver(logger: Logger, metrics: Metrics, limits: LogLimiterOptions = {}): UpstreamObserver {
  const lines = failureLines(logger, metrics, limits);
  const counted: CallCounting = { metrics, lines, origins: new BoundedLabel(50), calls: new WeakMap() };
  return {
    upstreamAttempt: (upstreamCall, attempt) => noteAttempt(counted, upstreamCall, attempt),
    upstreamCall: (upstreamCall, run) => observeCall(counted, upstreamCall, run),
    logFailure(error, fields) {
      const scope = currentRequest();
      if (lines.written(error) || scope?.aborted) return;
      lines.write(
        {
          tenantId: scope?.tenantId,
          ...(fields.path && { path: fields.path }),
          origin: scope?.lastOrigin ?? 'none',
          cause: error.details.cause ?? causeOfCode(error),
          code: error.code,
          detail: error.message,
          attempts: 0,
          durationMs: 0,
        },
        error,
      );
    },
    originLabel: (origin) => counted.origins.value(origin),
    flush: lines.flush,
    close: lines.close,
  };
}

/** The "upstream call failed" lines: each error written once, rate-limited per shard, list and cause, the suppressed counted and summed up every window. */
interface FailureLines {
  write(failure: UpstreamFailure, error: object): void;
  /** Whether `error` was written already (so the Apollo plugin does not log a call's failure again). */
  written(error: object): boolean;
  flush(): void;
  close(): void;
}

function failureLines(logger: Logger, metrics: Metrics, limits: LogLimiterOptions): FailureLines {
  const limiter = new LogLimiter<UpstreamFailure>(limits);
  const logged = new WeakSet<object>();
  const flush = () => {
    for (const { suppressed, detail } of limiter.drain()) {
      logger.warn(
        { event: 'upstream_call_failed_suppressed', origin: detail.origin, list: detail.list, path: detail.path, cause: detail.cause, suppressed, windowSeconds: limiter.windowMs / 1000 },
        `${suppressed} more upstream call failures like this were not logged`,
      );
    }
  };
  const timer = setInterval(flush, limiter.windowMs);
  timer.unref();
  return {
    write(failure, error) {
      logged.add(error);
      const key = `${failure.origin} ${failure.list ?? failure.path} ${failure.cause}`;
      if (limiter.allow(key, failure)) logger.warn({ event: 'upstream_call_failed', ...failure }, 'upstream call failed');
      else metrics.logLinesSuppressed.inc({ event: 'upstream_call_failed' });
    },
    written: (error) => logged.has(error),
    flush,
    close() {
      clearInterval(timer);
      flush();
    },
  };
}

/** What the call events share: the metrics, the failure lines, the bounded origin label, and the record of each call under way (the call object is the key: gone with it). */
interface CallCounting {
  readonly metrics: Metrics;
  readonly lines: FailureLines;
  readonly origins: BoundedLabel;
  readonly calls: WeakMap<UpstreamCall, CallRecord>;
}

/** One attempt of a call: noted on the request and the call's record, and counted per shard. */
function noteAttempt({ metrics, origins, calls }: CallCounting, upstreamCall: UpstreamCall, attempt: UpstreamAttempt): void {
  const scope = currentRequest();
  if (scope) scope.lastOrigin = attempt.origin;
  const call = calls.get(upstreamCall);
  if (call) {
    call.attempts += 1;
    call.origin = attempt.origin;
    call.lastOutcome = attempt.outcome;
    call.lastStatus = attempt.status;
  }
  // A call cancelled because the client left says nothing about the upstream; an
  // attempt of a shared call reported to a request that joined it was counted once already.
  if (attempt.outcome === 'aborted' || attempt.shared) return;
  const origin = origins.value(attempt.origin);
  const list = upstreamCall.list;
  metrics.upstreamRequests.inc({ list, origin, status: String(attempt.status) });
  metrics.upstreamDuration.observe({ list, origin }, attempt.durationMs / 1000);
}

/** One list call, run: its outcome counted per shard once it settles, and a failure's line written. */
function observeCall<T>(counting: CallCounting, upstreamCall: UpstreamCall, run: () => Promise<T>): Promise<T> {
  const { metrics, origins, calls } = counting;
  const scope = currentRequest();
  if (scope) {
    scope.upstreamCalls += 1;
    scope.tenantId ??= upstreamCall.tenantId;
  }
  const call: CallRecord = { attempts: 0, origin: undefined, lastOutcome: undefined, lastStatus: 0 };
  calls.set(upstreamCall, call);
  const started = performance.now();
  return run().then(
    (page) => {
      metrics.upstreamCalls.inc({ list: upstreamCall.list, origin: origins.value(call.origin), outcome: 'ok' });
      return page;
    },
    (error: unknown) => {
      callFailed(counting, upstreamCall, call, error, { aborted: scope?.aborted === true, started });
      throw error;
    },
  );
}

/** A call failed: counted as `aborted` when its client left (a timeout is no abort), else by its cause, with its line. */
function callFailed({ metrics, origins, lines }: CallCounting, upstreamCall: UpstreamCall, call: CallRecord, error: unknown, request: { aborted: boolean; started: number }): void {
  const { tenantId, list, signal } = upstreamCall;
  const origin = origins.value(call.origin);
  if ((signal?.aborted && !isTimeoutReason(signal.reason)) || request.aborted) {
    metrics.upstreamCalls.inc({ list, origin, outcome: 'aborted' });
    return;
  }
  const cause = finalCause(error, call);
  metrics.upstreamCalls.inc({ list, origin, outcome: cause });
  if (typeof error !== 'object' || error === null || lines.written(error)) return;
  lines.write(
    {
      tenantId,
      list,
      origin: call.origin ?? 'none',
      cause,
      ...(cause === 'http_status' && { status: call.lastStatus }),
      code: isUpstreamError(error) ? error.code : 'INTERNAL_SERVER_ERROR',
      ...(error instanceof Error && { detail: error.message }),
      attempts: call.attempts,
      durationMs: Math.round(performance.now() - request.started),
    },
    error,
  );
}

/**
 * The cause of a call's final failure: what the thrower named, else what its last
 * attempt ended in, else what its code says (a failure before any attempt).
 */
function finalCause(error: unknown, call: CallRecord): FailureCause {
  if (isUpstreamError(error) && error.details.cause) return error.details.cause;
  if (call.lastOutcome && call.lastOutcome !== 'ok' && call.lastOutcome !== 'aborted') return call.lastOutcome;
  if (!isUpstreamError(error)) return 'network';
  if (call.attempts === 0) {
    // Nothing was sent: the scope check or the token (the token cache logs its own line).
    return error.code === 'FORBIDDEN' ? 'scope_missing' : 'token';
  }
  // The last attempt was answered, then the body was not the envelope; or the
  // deadline ran out while waiting to retry.
  if (error.code === 'UPSTREAM_UNAVAILABLE') return 'timeout';
  return causeOfCode(error);
}

function causeOfCode(error: UpstreamError): FailureCause {
  switch (error.code) {
    case 'FORBIDDEN':
      return 'scope_missing';
    case 'UPSTREAM_BAD_RESPONSE':
      return 'bad_response';
    case 'UPSTREAM_UNAUTHORIZED':
    case 'UPSTREAM_MISCONFIGURED':
      return 'token';
    case 'UPSTREAM_RATE_LIMITED':
      return 'http_status';
    default:
      return 'network';
  }
}
