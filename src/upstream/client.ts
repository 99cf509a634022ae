import { request, type Dispatcher } from 'undici';
import { LIST_PATHS, REQUIRED_SCOPE, UPSTREAM_PAGE_SIZE } from './endpoints';
import { UpstreamError } from './errors';
import { MAX_BODY_BYTES, readJson, retryAfterSeconds } from './http';
import { parsePageReference, pageUrl, type PageRef } from './pageReference';
import { recordMappers, type ListName, type MalformedRecord, type RecordOf } from './records';
import type { TokenCache } from './tokenCache';
import type { TokenGrant } from './tokenEndpoint';
import { describeNetworkError } from './tokenEndpoint';
import { noteShard, traceListCall } from '../telemetry';

/** One page of a list, validated and mapped. */
export interface ListPage<T> {
  /** The reference this page was fetched with (`null`: the first page). */
  readonly ref: PageRef | null;
  /** The `page_size` it was fetched with; the same reference and size give the same page again. */
  readonly pageSize: number;
  /** Records in upstream order; an item of the wrong shape stays in place as a MalformedRecord. */
  readonly items: ReadonlyArray<T | MalformedRecord>;
  readonly hasMore: boolean;
  readonly next: PageRef | null;
  readonly previous: PageRef | null;
}

/** Observes each list call (for metrics): list, HTTP status or 0 for a network error, duration in ms. */
export type ListCallListener = (list: ListName, status: number, durationMs: number) => void;

export interface WfsClientOptions {
  readonly tokens: TokenCache;
  readonly dispatcher: Dispatcher;
  /** 429 retries before UPSTREAM_RATE_LIMITED. Default 2. */
  readonly maxRateLimitRetries?: number;
  /** The longest Retry-After, in seconds, we wait for in-request; longer fails at once. Default 2. */
  readonly maxRetryAfterSeconds?: number;
  /** Whole-call deadline in ms, retries included. Default 10 000. */
  readonly deadlineMs?: number;
  readonly onListCall?: ListCallListener;
}

/**
 * The small typed client the GraphQL side uses: one method, one page of a list,
 * for one tenant. It owns the upstream's HTTP rules: bearer token from the cache,
 * the tenant's shard from `api_base`, a single renewal on 401, bounded retries on
 * 429 and transient faults, and envelope validation.
 */
export class WfsClient {
  constructor(private readonly options: WfsClientOptions) {}

  /**
   * One page of a list. `pageSize` is sent unless the reference carries its own
   * `page_size` (a URL the upstream gave us); the page reports the size it used.
   */
  async listPage<L extends ListName>(
    tenantId: string,
    list: L,
    ref: PageRef | null,
    signal?: AbortSignal,
    pageSize: number = UPSTREAM_PAGE_SIZE,
  ): Promise<ListPage<RecordOf[L]>> {
    return traceListCall(list, pageSize, () => this.tracedListPage(tenantId, list, ref, signal, pageSize));
  }

  private async tracedListPage<L extends ListName>(tenantId: string, list: L, ref: PageRef | null, signal: AbortSignal | undefined, pageSize: number): Promise<ListPage<RecordOf[L]>> {
    const deadline = AbortSignal.timeout(this.options.deadlineMs ?? 10_000);
    const combined = signal ? AbortSignal.any([signal, deadline]) : deadline;
    let grant = await this.options.tokens.getToken(tenantId);
    noteShard(grant.apiBase);
    let renewed = false;
    let rateLimitRetries = 0;
    let transientRetries = 0;
    for (;;) {
      checkScope(grant, list);
      const outcome = await this.send(grant, list, ref, pageSize, combined);
      if (outcome.kind === 'page') return outcome.page;
      if (outcome.kind === 'unauthorized') {
        if (renewed) {
          throw new UpstreamError('UPSTREAM_UNAUTHORIZED', `the upstream refused a freshly issued token for tenant ${tenantId} (401 twice)`, { status: 401 });
        }
        renewed = true;
        grant = await this.options.tokens.renewAfterUnauthorized(tenantId, grant);
        continue;
      }
      if (outcome.kind === 'rate-limited') {
        const wait = outcome.retryAfterSeconds ?? 0.2 * 2 ** rateLimitRetries;
        if (rateLimitRetries >= (this.options.maxRateLimitRetries ?? 2) || wait > (this.options.maxRetryAfterSeconds ?? 2)) {
          throw new UpstreamError('UPSTREAM_RATE_LIMITED', `the upstream is rate limiting tenant ${tenantId}; retry later`, {
            status: 429,
            ...(outcome.retryAfterSeconds !== undefined && { retryAfterSeconds: outcome.retryAfterSeconds }),
          });
        }
        rateLimitRetries += 1;
        await sleep(wait * 1000, combined);
        continue;
      }
      // Transient (network error, 502/503/504): one retry for an idempotent GET.
      if (transientRetries >= 1 || combined.aborted) throw outcome.error;
      transientRetries += 1;
      await sleep(100, combined);
    }
  }

  private async send<L extends ListName>(
    grant: TokenGrant,
    list: L,
    ref: PageRef | null,
    pageSize: number,
    signal: AbortSignal,
  ): Promise<
    | { kind: 'page'; page: ListPage<RecordOf[L]> }
    | { kind: 'unauthorized' }
    | { kind: 'rate-limited'; retryAfterSeconds: number | undefined }
    | { kind: 'transient'; error: UpstreamError }
  > {
    const url = pageUrl(grant.apiBase, LIST_PATHS[list], ref, pageSize);
    const fromReference = Number(url.searchParams.get('page_size'));
    const sentSize = Number.isInteger(fromReference) && fromReference > 0 ? fromReference : pageSize;
    const started = performance.now();
    let response: Dispatcher.ResponseData;
    try {
      response = await request(url, {
        method: 'GET',
        dispatcher: this.options.dispatcher,
        headers: { authorization: `Bearer ${grant.accessToken}`, accept: 'application/json' },
        signal,
      });
    } catch (error) {
      this.options.onListCall?.(list, 0, performance.now() - started);
      if (signal.aborted) throw new UpstreamError('UPSTREAM_UNAVAILABLE', `the ${list} call was cancelled or timed out`);
      if (isTooLarge(error)) throw tooLarge(list);
      return { kind: 'transient', error: new UpstreamError('UPSTREAM_UNAVAILABLE', `the upstream could not be reached for ${list} (${describeNetworkError(error)})`) };
    }
    const status = response.statusCode;
    if (status !== 200) {
      // Status codes decide; error bodies are undocumented and never read.
      await response.body.dump().catch(() => undefined);
      this.options.onListCall?.(list, status, performance.now() - started);
      return classifyStatus(list, status, retryAfterSeconds(response.headers['retry-after']));
    }
    let body: unknown;
    try {
      body = await readJson(response.body);
    } catch (error) {
      this.options.onListCall?.(list, 0, performance.now() - started);
      if (signal.aborted) throw new UpstreamError('UPSTREAM_UNAVAILABLE', `the ${list} call was cancelled or timed out`);
      if (isTooLarge(error)) throw tooLarge(list);
      return { kind: 'transient', error: new UpstreamError('UPSTREAM_UNAVAILABLE', `the ${list} response could not be read (${describeNetworkError(error)})`) };
    }
    this.options.onListCall?.(list, status, performance.now() - started);
    return { kind: 'page', page: parseEnvelope(body, list, ref, sentSize, grant.apiBase) };
  }
}

/** undici's error for a body over `maxResponseSize`: a bad response, not worth a retry. */
function isTooLarge(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE';
}

function tooLarge(list: ListName): UpstreamError {
  return new UpstreamError('UPSTREAM_BAD_RESPONSE', `the ${list} response is larger than ${MAX_BODY_BYTES} bytes`);
}

function checkScope(grant: TokenGrant, list: ListName): void {
  const scope = REQUIRED_SCOPE[list];
  if (scope && !grant.scopes.includes(scope)) {
    throw new UpstreamError('FORBIDDEN', `reading ${list} needs the scope "${scope}", which was not granted to this tenant`);
  }
}

function classifyStatus(list: ListName, status: number, retryAfter: number | undefined) {
  if (status === 401) return { kind: 'unauthorized' as const };
  if (status === 429) return { kind: 'rate-limited' as const, retryAfterSeconds: retryAfter };
  if (status === 403) throw new UpstreamError('FORBIDDEN', `the upstream refused access to ${list} (403): the tenant lacks a scope for it`, { status });
  const error =
    status >= 500
      ? new UpstreamError('UPSTREAM_UNAVAILABLE', `the upstream answered ${status} for ${list}`, { status })
      : new UpstreamError('UPSTREAM_BAD_RESPONSE', `the upstream answered ${status} for ${list}`, { status });
  if (status >= 500) return { kind: 'transient' as const, error };
  throw error;
}

function parseEnvelope<L extends ListName>(body: unknown, list: L, ref: PageRef | null, pageSize: number, apiBase: string): ListPage<RecordOf[L]> {
  const bad = (why: string): never => {
    throw new UpstreamError('UPSTREAM_BAD_RESPONSE', `the ${list} response is not a list envelope: ${why}`);
  };
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return bad('not a JSON object');
  const envelope = body as Record<string, unknown>;
  if (envelope.object !== 'list') bad('"object" is not "list"');
  if (!Array.isArray(envelope.data)) bad('"data" is not an array');
  if (typeof envelope.has_more !== 'boolean') bad('"has_more" is not a boolean');
  const path = LIST_PATHS[list];
  const next = parsePageReference(envelope.next, apiBase, path);
  if (envelope.has_more && next === null) bad('"has_more" is true but "next" is missing');
  const map = recordMappers[list] as (item: unknown) => RecordOf[L] | MalformedRecord;
  return {
    ref,
    pageSize,
    items: (envelope.data as unknown[]).map(map),
    hasMore: envelope.has_more as boolean,
    next: envelope.has_more ? next : null,
    previous: parsePageReference(envelope.previous, apiBase, path),
  };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new UpstreamError('UPSTREAM_UNAVAILABLE', 'the upstream call was cancelled or timed out'));
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new UpstreamError('UPSTREAM_UNAVAILABLE', 'the upstream call was cancelled or timed out'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
