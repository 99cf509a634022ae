import { request, type Dispatcher } from 'undici';
import { UpstreamError } from '../errors';
import { causeOfNetworkError, isTimeoutReason, type CallOutcome } from '../failureCause';
import { parseEnvelope, type ListPage } from '../envelope';
import type { UpstreamAttempt } from '../observer';
import type { UpstreamRecord } from '../resources';
import type { ShardFaultResult } from '../resilience/breaker';
import type { TokenGrant } from '../token/tokenEndpoint';
import { readJson, retryAfterSeconds } from '../transport/http';
import { timeLimit } from '../transport/timeLimit';
import { cancelled, outOfTime, statusError, tooLarge, unreachable, unreadable } from './callErrors';
import { listRequest, type PageRequest } from './request';
import { classifyStatus } from './statusClass';

/**
 * What one HTTP attempt came to, as a value: the request loop reads it, and the
 * shard's breaker counts a `shard-fault` (resilience/breaker.ts) without anything
 * thrown and caught back.
 */
export type Outcome<R> =
  | { readonly kind: 'page'; readonly page: ListPage<R> }
  | { readonly kind: 'unauthorized' }
  | { readonly kind: 'rate-limited'; readonly retryAfterSeconds: number | undefined }
  /** A 5xx, a connection error, an attempt out of time: retried, and counted against the shard. */
  | (ShardFaultResult & { readonly error: UpstreamError; readonly retryAfterSeconds: number | undefined })
  /** Ends the call (a 4xx, a body too large, a refused address, a call its callers left): no verdict on the shard. */
  | { readonly kind: 'failed'; readonly error: UpstreamError };

/** One attempt: the page, with which token, through what, within what. */
export interface ExchangeOptions<R extends UpstreamRecord> {
  readonly page: PageRequest<R>;
  readonly grant: TokenGrant;
  readonly dispatcher: Dispatcher;
  /** How long the attempt may take, in ms. */
  readonly timeoutMs: number;
  /** The shared call's signal (its callers' deadlines, or all of them gone). */
  readonly signal: AbortSignal;
  /** Told of the attempt once it is answered or failed. */
  readonly report: (attempt: UpstreamAttempt) => void;
}

/**
 * One HTTP exchange within the attempt timeout (on top of the shared call's signal),
 * from the timer to the parsed page. One function: each frame of the attempt is held
 * through the upstream wait. A 200 whose body is not the documented envelope is
 * thrown by `parseEnvelope` (it ends the call, like a `failed` outcome).
 */
export async function exchange<R extends UpstreamRecord>(options: ExchangeOptions<R>): Promise<Outcome<R>> {
  const { page, grant } = options;
  const list = page.resource.name;
  const timed = timeLimit(options.timeoutMs, options.signal);
  const signal = timed.signal;
  const sent = listRequest(grant, page);
  const started = performance.now();
  const report = (status: number, outcome: CallOutcome) => options.report({ status, durationMs: performance.now() - started, origin: grant.apiBase, outcome });
  try {
    let response: Dispatcher.ResponseData;
    try {
      response = await request(sent.url, { method: 'GET', dispatcher: options.dispatcher, headers: sent.headers, signal });
    } catch (error) {
      report(0, causeOfNetworkError(error, signal));
      return networkFault(list, error, signal, unreachable);
    }
    const status = response.statusCode;
    const verdict = classifyStatus(status, retryAfterSeconds(response.headers['retry-after']));
    if (verdict.kind !== 'ok') {
      await response.body.dump().catch(() => undefined);
      report(status, 'http_status');
      if (verdict.kind === 'shard-fault') return { kind: 'shard-fault', error: statusError(list, status, verdict.code), retryAfterSeconds: verdict.retryAfterSeconds };
      if (verdict.kind === 'failed') return { kind: 'failed', error: statusError(list, status, verdict.code) };
      return verdict;
    }
    let body: unknown;
    try {
      body = await readJson(response.body);
    } catch (error) {
      report(0, causeOfNetworkError(error, signal));
      return networkFault(list, error, signal, unreadable);
    }
    report(status, 'ok');
    return { kind: 'page', page: parseEnvelope(body, page.resource, page.ref, sent.pageSize, grant.apiBase) };
  } finally {
    timed.done();
  }
}

/**
 * An attempt that got no answer, or no whole body. Its signal fired: out of time (its
 * own timeout, or the deadlines of everyone waiting on it) is a shard fault, callers
 * that went away no verdict at all. A body over the size limit is a bad response, an
 * address the connector refused (a private network) is never retried; anything else
 * is a shard fault (`fault` says which words).
 */
function networkFault(list: string, error: unknown, signal: AbortSignal, fault: (list: string, error: unknown) => UpstreamError): Outcome<never> {
  if (signal.aborted) {
    return isTimeoutReason(signal.reason) ? { kind: 'shard-fault', error: outOfTime(list), retryAfterSeconds: undefined } : { kind: 'failed', error: cancelled(list) };
  }
  if (isTooLarge(error)) return { kind: 'failed', error: tooLarge(list) };
  if (error instanceof UpstreamError) return { kind: 'failed', error };
  return { kind: 'shard-fault', error: fault(list, error), retryAfterSeconds: undefined };
}

/** undici's error for a body over `maxResponseSize`. */
function isTooLarge(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE';
}
