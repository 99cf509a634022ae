import { request, type Dispatcher } from 'undici';
import { UPSTREAM_PAGE_SIZE } from './endpoints';
import { UpstreamError, cancelledError } from './errors';
import { causeOfNetworkError, type CallOutcome, type FailureCause } from './failureCause';
import { describeNetworkError, MAX_BODY_BYTES, readJson, retryAfterSeconds } from './http';
import { parsePageReference, pageUrl, type PageRef } from './pageReference';
import type { MalformedRecord, Resource, UpstreamRecord } from './resources';
import { noteShard, traceListCall } from '../telemetry';
import type { TokenCache } from './tokenCache';
import type { TokenGrant } from './tokenEndpoint';
import { ShardBreakers, ShardFault, type BreakerState, type ShardBreakerOptions } from './breaker';
import { TenantBulkheads, type TenantBulkheadOptions } from './bulkhead';
import { CallBudget, DEFAULT_UPSTREAM_CALL_BUDGET } from './callBudget';
import { InFlight, coalescingKey } from './coalescer';
import { RetryPolicy, type RetryPolicyOptions } from './retry';
import { RetryAfterWindows } from './retryAfterWindows';

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

/**
 * Observes each HTTP attempt of a list call (for logs and metrics): list name, HTTP status
 * or 0 for a network error, duration in ms, and the shard origin with the attempt's
 * outcome ('aborted' when the caller went away; see failureCause.ts).
 */
export type ListCallListener = (list: string, status: number, durationMs: number, attempt: ListAttempt) => void;

/** The call `ListCallWrapper` wraps: whose, which list, and the caller's signal. */
export interface ListCall {
  readonly tenantId: string;
  readonly list: string;
  readonly signal: AbortSignal | undefined;
}

/**
 * Runs around each list call as a whole (every attempt, retry and wait of it), for
 * logs and metrics that count a call once and log its final failure once.
 */
export type ListCallWrapper = <T>(call: ListCall, run: () => Promise<T>) => Promise<T>;

/** One attempt as the listener sees it: never a path, query, cursor or token. */
export interface ListAttempt {
  readonly origin: string;
  readonly outcome: CallOutcome;
}

/**
 * Observes the resilience mechanisms (for metrics). Every callback is optional.
 * `failFast` reasons: `breaker` (shard breaker open), `retry-after` (a Retry-After
 * window in force), `bulkhead` (the tenant's queue full), `budget` (the request's
 * call budget spent).
 */
export interface ResilienceListener {
  readonly onBreakerState?: (origin: string, state: BreakerState) => void;
  readonly onRetry?: (list: string, reason: 'transient' | 'rate-limited' | 'retry-after' | 'unauthorized') => void;
  readonly onCoalesced?: (list: string) => void;
  readonly onQueued?: () => void;
  readonly onRejected?: () => void;
  readonly onFailFast?: (reason: 'breaker' | 'retry-after' | 'bulkhead' | 'budget') => void;
}

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

export interface WfsClientOptions {
  readonly tokens: TokenCache;
  readonly dispatcher: Dispatcher;
  /** 429 retries before UPSTREAM_RATE_LIMITED. Default 2. */
  readonly maxRateLimitRetries?: number;
  /** The longest Retry-After, in seconds, we wait for in-request; longer fails at once. Default 2. */
  readonly maxRetryAfterSeconds?: number;
  /** Deadline in ms of a call made without a budget (a budget carries the request's own). Default 10 000. */
  readonly deadlineMs?: number;
  /** Upstream page calls one GraphQL request may make (`WFS_UPSTREAM_CALL_BUDGET`). Default 200. */
  readonly callBudget?: number;
  readonly retry?: RetryPolicyOptions;
  readonly breaker?: Omit<ShardBreakerOptions, 'onStateChange' | 'onFailFast'>;
  readonly bulkhead?: Omit<TenantBulkheadOptions, 'onQueued' | 'onRejected'>;
  readonly onListCall?: ListCallListener;
  readonly aroundListCall?: ListCallWrapper;
  readonly resilience?: ResilienceListener;
  /** Clock for Retry-After windows. Default Date.now. */
  readonly now?: () => number;
}

/** One page as the request loop sends it: which list, where in it, how large, with which query. */
interface PageRequest<R extends UpstreamRecord> {
  readonly resource: Resource<R>;
  readonly ref: PageRef | null;
  readonly pageSize: number;
  readonly query: Readonly<Record<string, string>> | undefined;
}

type Outcome<R> =
  | { kind: 'page'; page: ListPage<R> }
  | { kind: 'unauthorized' }
  | { kind: 'rate-limited'; retryAfterSeconds: number | undefined }
  | { kind: 'transient'; error: UpstreamError; retryAfterSeconds?: number | undefined };

/**
 * The small typed client the GraphQL side uses: one method, one page of a list,
 * for one tenant. It owns the upstream's HTTP rules: bearer token from the cache,
 * the tenant's shard from `api_base`, a single renewal on 401, Retry-After honoured
 * on 429 and 503, jittered retries of transient faults, and envelope validation.
 * The mechanisms live in their own modules: in-flight sharing (`coalescer`), the
 * shard breaker (`breaker`), the tenant bulkhead (`bulkhead`), backoff (`retry`),
 * Retry-After windows (`retryAfterWindows`), the per-request call budget (`callBudget`).
 */
export class WfsClient {
  private readonly inFlight: InFlight<ListPage<unknown>>;
  private readonly breakers: ShardBreakers;
  private readonly bulkheads: TenantBulkheads;
  private readonly retryPolicy: RetryPolicy;
  private readonly windows: RetryAfterWindows;

  constructor(private readonly options: WfsClientOptions) {
    const listener = options.resilience ?? {};
    this.inFlight = new InFlight();
    this.breakers = new ShardBreakers({
      ...options.breaker,
      ...(listener.onBreakerState && { onStateChange: listener.onBreakerState }),
      onFailFast: () => listener.onFailFast?.('breaker'),
    });
    this.bulkheads = new TenantBulkheads({
      ...options.bulkhead,
      ...(listener.onQueued && { onQueued: listener.onQueued }),
      onRejected: () => {
        listener.onRejected?.();
        listener.onFailFast?.('bulkhead');
      },
    });
    this.retryPolicy = new RetryPolicy(options.retry);
    this.windows = new RetryAfterWindows(options.now);
  }

  /** A fresh call budget for one GraphQL request (its signal carries the request's deadline). */
  budgetFor(signal: AbortSignal, deadlineMs?: number): CallBudget {
    return new CallBudget(this.options.callBudget ?? DEFAULT_UPSTREAM_CALL_BUDGET, signal, deadlineMs);
  }

  /**
   * Checks, without an upstream call, that the tenant's current token grants what
   * `resource` needs: what a request serves from memory (the entity index) is checked
   * as a call would be, so a withdrawn scope stops it too. FORBIDDEN when not granted.
   */
  async authorize(tenantId: string, resource: Resource<UpstreamRecord>): Promise<void> {
    if (resource.scope) checkScope(await this.options.tokens.getToken(tenantId), resource);
  }

  /**
   * One page of a list. `pageSize` is sent unless the reference carries its own
   * `page_size` (a URL the upstream gave us); the page reports the size it used.
   * Concurrent calls for the same page of the same tenant share one upstream call.
   */
  listPage<R extends UpstreamRecord>(tenantId: string, resource: Resource<R>, options: ListPageOptions = {}): Promise<ListPage<R>> {
    const run = () => traceListCall(resource.name, options.pageSize ?? UPSTREAM_PAGE_SIZE, () => this.sharedPage(tenantId, resource, options));
    const around = this.options.aroundListCall;
    return around ? around({ tenantId, list: resource.name, signal: options.signal }, run) : run();
  }

  /** One page for one caller: budget, token, scope, then the call it shares with identical callers in flight. */
  private async sharedPage<R extends UpstreamRecord>(tenantId: string, resource: Resource<R>, options: ListPageOptions): Promise<ListPage<R>> {
    const page: PageRequest<R> = { resource, ref: options.ref ?? null, pageSize: options.pageSize ?? UPSTREAM_PAGE_SIZE, query: options.query };
    const list = resource.name;
    const deadlineMs = this.options.deadlineMs ?? 10_000;
    const budget = options.budget ?? this.budgetFor(options.signal ?? AbortSignal.timeout(deadlineMs), deadlineMs);
    const signal = options.signal ?? budget.signal;
    if (signal.aborted) throw cancelledError();
    try {
      budget.take(list);
    } catch (error) {
      this.options.resilience?.onFailFast?.('budget');
      throw error;
    }
    const grant = await this.options.tokens.getToken(tenantId);
    noteShard(grant.apiBase);
    checkScope(grant, resource);
    // The key is the exact URL the call sends: list, reference, page size and any filter.
    const key = coalescingKey(tenantId, listUrl(grant, page));
    if (this.inFlight.has(key)) this.options.resilience?.onCoalesced?.(list);
    const fetched = (await this.inFlight.run(key, signal, (shared) => this.fetchPage(tenantId, page, grant, shared, budget.deadlineAt))) as ListPage<R>;
    budget.notePage(list, fetched);
    return fetched;
  }

  /** The request loop of one page: windows, bulkhead, breaker, retries, one 401 renewal. */
  private async fetchPage<R extends UpstreamRecord>(tenantId: string, page: PageRequest<R>, grant: TokenGrant, signal: AbortSignal, deadlineAt: number): Promise<ListPage<R>> {
    const { resource } = page;
    const list = resource.name;
    const maxWaitMs = (this.options.maxRetryAfterSeconds ?? 2) * 1000;
    const remaining = () => deadlineAt - performance.now();
    const retries = this.retryPolicy.schedule();
    const rateLimitBackoff = this.retryPolicy.schedule(this.options.maxRateLimitRetries ?? 2);
    const listener = this.options.resilience;
    let renewed = false;
    let rateLimitRetries = 0;
    for (;;) {
      checkScope(grant, resource);
      // The token's api_base, validated to an origin (checkApiBase).
      const origin = grant.apiBase;
      // A Retry-After window in force: wait out a short one within the budget, fail fast on a long one.
      const tenantWait = this.windows.remainingMs('tenant', tenantId);
      const shardWait = this.windows.remainingMs('shard', origin);
      const windowWait = Math.max(tenantWait, shardWait);
      if (windowWait > 0) {
        if (windowWait > maxWaitMs || windowWait >= remaining()) {
          listener?.onFailFast?.('retry-after');
          throw tenantWait >= shardWait ? rateLimited(tenantId, Math.ceil(tenantWait / 1000), 'retry_after_window') : shardBusy(origin, list, Math.ceil(shardWait / 1000), 'retry_after_window');
        }
        listener?.onRetry?.(list, 'retry-after');
        await sleep(windowWait, signal);
      }

      const outcome = await this.attempt(tenantId, origin, page, grant, signal);
      if (outcome.kind === 'page') {
        this.options.tokens.markUsed(grant);
        return outcome.page;
      }
      if (outcome.kind === 'unauthorized') {
        if (renewed) {
          throw new UpstreamError('UPSTREAM_UNAUTHORIZED', `the upstream refused a freshly issued token for tenant ${tenantId} (401 twice)`, { status: 401 });
        }
        renewed = true;
        listener?.onRetry?.(list, 'unauthorized');
        grant = await this.options.tokens.renewAfterUnauthorized(tenantId, grant);
        continue;
      }
      if (outcome.kind === 'rate-limited') {
        if (outcome.retryAfterSeconds !== undefined) {
          this.windows.open('tenant', tenantId, outcome.retryAfterSeconds);
          const wait = outcome.retryAfterSeconds * 1000;
          if (rateLimitRetries >= (this.options.maxRateLimitRetries ?? 2) || wait > maxWaitMs || wait >= remaining()) {
            throw rateLimited(tenantId, outcome.retryAfterSeconds);
          }
          rateLimitRetries += 1;
          continue; // the window check above waits it out
        }
        const wait = rateLimitRetries < (this.options.maxRateLimitRetries ?? 2) ? rateLimitBackoff.next(remaining()) : undefined;
        if (wait === undefined) throw rateLimited(tenantId, undefined);
        rateLimitRetries += 1;
        listener?.onRetry?.(list, 'rate-limited');
        await sleep(wait, signal);
        continue;
      }
      // Transient (network error, timeout, 5xx). A 503 with Retry-After is the shard asking for a pause.
      if (outcome.retryAfterSeconds !== undefined) {
        this.windows.open('shard', origin, outcome.retryAfterSeconds);
        const wait = outcome.retryAfterSeconds * 1000;
        if (rateLimitRetries >= (this.options.maxRateLimitRetries ?? 2) || wait > maxWaitMs || wait >= remaining()) {
          throw shardBusy(origin, list, outcome.retryAfterSeconds);
        }
        rateLimitRetries += 1;
        continue;
      }
      const wait = signal.aborted ? undefined : retries.next(remaining());
      if (wait === undefined) throw outcome.error;
      listener?.onRetry?.(list, 'transient');
      await sleep(wait, signal);
    }
  }

  /** One HTTP attempt, through the tenant's bulkhead and the shard's breaker. */
  private async attempt<R extends UpstreamRecord>(tenantId: string, origin: string, page: PageRequest<R>, grant: TokenGrant, signal: AbortSignal): Promise<Outcome<R>> {
    // The breaker is outside the bulkhead: an open breaker fails fast without queueing.
    try {
      return await this.breakers.run(origin, () =>
        this.bulkheads.run(tenantId, signal, async () => {
          const outcome = await this.send(grant, page, signal);
          // A shard fault counts against the shard's breaker; a cancelled call does not.
          if (outcome.kind === 'transient' && !signal.aborted) throw new ShardFault(outcome.error, outcome.retryAfterSeconds);
          return outcome;
        }),
      );
    } catch (error) {
      if (error instanceof ShardFault) return { kind: 'transient', error: error.error, retryAfterSeconds: error.retryAfterSeconds };
      throw error;
    }
  }

  private async send<R extends UpstreamRecord>(grant: TokenGrant, page: PageRequest<R>, signal: AbortSignal): Promise<Outcome<R>> {
    const list = page.resource.name;
    // Built from this attempt's token: after a renewal the tenant may live on another shard.
    const url = listUrl(grant, page);
    const fromReference = Number(url.searchParams.get('page_size'));
    const sentSize = Number.isInteger(fromReference) && fromReference > 0 ? fromReference : page.pageSize;
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
      this.options.onListCall?.(list, 0, performance.now() - started, { origin: url.origin, outcome: causeOfNetworkError(error, signal) });
      if (signal.aborted) throw new UpstreamError('UPSTREAM_UNAVAILABLE', `the ${list} call was cancelled or timed out`);
      if (isTooLarge(error)) throw tooLarge(list);
      // The connector refused the address (a private network): never retried.
      if (error instanceof UpstreamError) throw error;
      return { kind: 'transient', error: new UpstreamError('UPSTREAM_UNAVAILABLE', `the upstream could not be reached for ${list} (${describeNetworkError(error)})`) };
    }
    const status = response.statusCode;
    if (status !== 200) {
      // Status codes decide; error bodies are undocumented and never read.
      await response.body.dump().catch(() => undefined);
      this.options.onListCall?.(list, status, performance.now() - started, { origin: url.origin, outcome: 'http_status' });
      return classifyStatus(list, status, retryAfterSeconds(response.headers['retry-after']));
    }
    let body: unknown;
    try {
      body = await readJson(response.body);
    } catch (error) {
      this.options.onListCall?.(list, 0, performance.now() - started, { origin: url.origin, outcome: causeOfNetworkError(error, signal) });
      if (signal.aborted) throw new UpstreamError('UPSTREAM_UNAVAILABLE', `the ${list} call was cancelled or timed out`);
      if (isTooLarge(error)) throw tooLarge(list);
      return { kind: 'transient', error: new UpstreamError('UPSTREAM_UNAVAILABLE', `the ${list} response could not be read (${describeNetworkError(error)})`) };
    }
    this.options.onListCall?.(list, status, performance.now() - started, { origin: url.origin, outcome: 'ok' });
    return { kind: 'page', page: parseEnvelope(body, page.resource, page.ref, sentSize, grant.apiBase) };
  }
}

/** The URL of one page: the tenant's shard, the list's path, the reference, `page_size` and the resource's query. */
function listUrl(grant: TokenGrant, { resource, ref, pageSize, query }: PageRequest<UpstreamRecord>): URL {
  const url = pageUrl(grant.apiBase, resource.path, ref, pageSize);
  if (ref === null && query) for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
  return url;
}

/** undici's error for a body over `maxResponseSize`: a bad response, not worth a retry. */
function isTooLarge(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE';
}

function tooLarge(list: string): UpstreamError {
  return new UpstreamError('UPSTREAM_BAD_RESPONSE', `the ${list} response is larger than ${MAX_BODY_BYTES} bytes`);
}

function checkScope(grant: TokenGrant, resource: Resource<UpstreamRecord>): void {
  const scope = resource.scope;
  if (scope && !grant.scopes.includes(scope)) {
    throw new UpstreamError('FORBIDDEN', `reading ${resource.name} needs the scope "${scope}", which was not granted to this tenant`);
  }
}

function classifyStatus(list: string, status: number, retryAfter: number | undefined) {
  if (status === 401) return { kind: 'unauthorized' as const };
  if (status === 429) return { kind: 'rate-limited' as const, retryAfterSeconds: retryAfter };
  if (status === 403) throw new UpstreamError('FORBIDDEN', `the upstream refused access to ${list} (403): the tenant lacks a scope for it`, { status });
  const error =
    status >= 500
      ? new UpstreamError('UPSTREAM_UNAVAILABLE', `the upstream answered ${status} for ${list}`, { status })
      : new UpstreamError('UPSTREAM_BAD_RESPONSE', `the upstream answered ${status} for ${list}`, { status });
  // 503 with Retry-After is the shard asking for a pause, like a 429 for the whole shard.
  if (status >= 500) return { kind: 'transient' as const, error, retryAfterSeconds: status === 503 ? retryAfter : undefined };
  throw error;
}

function parseEnvelope<R extends UpstreamRecord>(body: unknown, resource: Resource<R>, ref: PageRef | null, pageSize: number, apiBase: string): ListPage<R> {
  const list = resource.name;
  const bad = (why: string): never => {
    throw new UpstreamError('UPSTREAM_BAD_RESPONSE', `the ${list} response is not a list envelope: ${why}`);
  };
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return bad('not a JSON object');
  const envelope = body as Record<string, unknown>;
  if (envelope.object !== 'list') bad('"object" is not "list"');
  if (!Array.isArray(envelope.data)) bad('"data" is not an array');
  if (typeof envelope.has_more !== 'boolean') bad('"has_more" is not a boolean');
  const path = resource.path;
  const next = parsePageReference(envelope.next, apiBase, path);
  if (envelope.has_more && next === null) bad('"has_more" is true but "next" is missing');
  return {
    ref,
    pageSize,
    items: (envelope.data as unknown[]).map((item) => resource.map(item)),
    hasMore: envelope.has_more as boolean,
    next: envelope.has_more ? next : null,
    previous: parsePageReference(envelope.previous, apiBase, path),
  };
}

function rateLimited(tenantId: string, retryAfter: number | undefined, cause?: FailureCause): UpstreamError {
  return new UpstreamError('UPSTREAM_RATE_LIMITED', `the upstream is rate limiting tenant ${tenantId}; retry later`, {
    status: 429,
    ...(cause && { cause }),
    ...(retryAfter !== undefined && { retryAfterSeconds: retryAfter }),
  });
}

function shardBusy(origin: string, list: string, retryAfter: number, cause?: FailureCause): UpstreamError {
  return new UpstreamError('UPSTREAM_UNAVAILABLE', `the upstream shard ${origin} is unavailable for ${list} (503); retry after ${retryAfter} s`, {
    status: 503,
    ...(cause && { cause }),
    retryAfterSeconds: retryAfter,
  });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(cancelledError());
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(cancelledError());
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
