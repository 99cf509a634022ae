import { setTimeout as delay } from 'node:timers/promises';
import { request, type Dispatcher } from 'undici';
import { UPSTREAM_PAGE_SIZE } from './endpoints';
import { UpstreamError, cancelledError } from './errors';
import { causeOfNetworkError, isTimeoutReason, type CallOutcome, type FailureCause } from './failureCause';
import { describeNetworkError, MAX_BODY_BYTES, readJson, retryAfterSeconds } from './transport/http';
import { parseEnvelope, type ListPage } from './envelope';
import { pageUrl, sentPageSize, type PageRef } from './pageReference';
import type { Resource, UpstreamRecord } from './resources';
import { NO_OBSERVER, type Observer, type RetryReason, type UpstreamAttempt, type UpstreamCall } from './observer';
import type { TokenCache } from './token/tokenCache';
import type { TokenGrant } from './token/tokenEndpoint';
import { UnauthorizedRule } from './token/unauthorized';
import { ShardBreakers, ShardFault, type ShardBreakerOptions } from './resilience/breaker';
import { TenantBulkheads, type TenantBulkheadOptions } from './resilience/bulkhead';
import { CallBudget, DEFAULT_UPSTREAM_CALL_BUDGET } from './resilience/callBudget';
import { InFlight, coalescingKey, type SharedCallView } from './resilience/coalescer';
import { RetryPolicy, type RetryPolicyOptions, type RetrySchedule } from './resilience/retry';
import { RetryAfterWindows, type WindowScope } from './resilience/retryAfterWindows';
import { NUMERIC_SETTINGS } from '../config';
import { timeLimit } from './transport/timeLimit';

export type { ListPage } from './envelope';

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
  /**
   * How long, in ms, one HTTP attempt may take (`WFS_UPSTREAM_ATTEMPT_TIMEOUT_MS`);
   * an attempt that runs out of it counts against the shard's breaker. Default: its value in src/config.ts.
   */
  readonly attemptTimeoutMs?: number;
  /** The longest shard (503) Retry-After window kept, in seconds (`WFS_SHARD_RETRY_AFTER_MAX_S`). Default: its value in src/config.ts. */
  readonly shardRetryAfterMaxSeconds?: number;
  /** The longest tenant (429) Retry-After window kept, in seconds (`WFS_TENANT_RETRY_AFTER_MAX_S`). Default: its value in src/config.ts. */
  readonly tenantRetryAfterMaxSeconds?: number;
  /** Upstream page calls one GraphQL request may make (`WFS_UPSTREAM_CALL_BUDGET`). Default: its value in src/config.ts. */
  readonly callBudget?: number;
  readonly retry?: RetryPolicyOptions;
  readonly breaker?: Omit<ShardBreakerOptions, 'onStateChange' | 'onFailFast'>;
  readonly bulkhead?: Omit<TenantBulkheadOptions, 'onQueued' | 'onRejected'>;
  /** What the client reports (calls, attempts, retries, breaker and bulkhead events); default: nothing. */
  readonly observer?: Observer;
  /** Clock for Retry-After windows. Default Date.now. */
  readonly now?: () => number;
}

/** The per-key structures the client keeps, by size (tests check they stay bounded). */
export interface ClientFootprint {
  readonly breakers: number;
  readonly windows: number;
  readonly bulkheads: number;
  readonly inFlight: number;
}

/** A probe call a capped Retry-After window let through (see retryAfterWindows.ts). */
interface WindowProbe {
  readonly scope: WindowScope;
  readonly key: string;
  readonly probe: object;
}

/** One page as the request loop sends it: which list, where in it, how large, with which query. */
interface PageRequest<R extends UpstreamRecord> {
  readonly resource: Resource<R>;
  readonly ref: PageRef | null;
  readonly pageSize: number;
  readonly query: Readonly<Record<string, string>> | undefined;
}

/** What one page call keeps from try to try (`WfsClient.triesOf`). */
interface Tries {
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

/** What a step decided after an answer that was no page: try again at once, or after a wait (a retry of `reason`). */
type NextTry = 'now' | { readonly waitMs: number; readonly reason: RetryReason };

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
  /** The attempts of each shared call so far, reported again to each request that joined it. */
  private readonly attemptsOf = new WeakMap<SharedCallView, UpstreamAttempt[]>();
  private readonly observer: Observer;

  constructor(private readonly options: WfsClientOptions) {
    const observer = (this.observer = options.observer ?? NO_OBSERVER);
    this.inFlight = new InFlight();
    this.breakers = new ShardBreakers({
      ...options.breaker,
      onStateChange: (origin, state) => observer.breakerTransition(origin, state),
      onFailFast: () => observer.upstreamFailFast('breaker'),
    });
    this.bulkheads = new TenantBulkheads({
      ...options.bulkhead,
      onQueued: () => observer.bulkheadQueued(),
      onRejected: () => {
        observer.bulkheadRejected();
        observer.upstreamFailFast('bulkhead');
      },
    });
    this.retryPolicy = new RetryPolicy(options.retry);
    this.windows = new RetryAfterWindows({
      ...(options.now && { now: options.now }),
      ...(options.shardRetryAfterMaxSeconds !== undefined && { shardMaxSeconds: options.shardRetryAfterMaxSeconds }),
      ...(options.tenantRetryAfterMaxSeconds !== undefined && { tenantMaxSeconds: options.tenantRetryAfterMaxSeconds }),
    });
  }

  /** How many breakers, windows, bulkheads and shared calls are kept now. */
  footprint(): ClientFootprint {
    return { breakers: this.breakers.size, windows: this.windows.size, bulkheads: this.bulkheads.size, inFlight: this.inFlight.size };
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
    const call: UpstreamCall = { tenantId, list: resource.name, pageSize: options.pageSize ?? UPSTREAM_PAGE_SIZE, signal: options.signal };
    return this.observer.upstreamCall(call, () => this.sharedPage(call, resource, options));
  }

  /**
   * A call made with neither a signal nor a budget gets a deadline of its own, disarmed
   * when the call ends (AbortSignal.timeout would stay armed, with whatever still
   * listens to it, for the whole deadline).
   */
  private sharedPage<R extends UpstreamRecord>(call: UpstreamCall, resource: Resource<R>, options: ListPageOptions): Promise<ListPage<R>> {
    // Not async: a request's call (it has a signal) goes straight on, one suspended frame fewer while it waits.
    if (options.budget || options.signal) return this.sharedPageWithin(call, resource, options);
    const deadlineMs = this.options.deadlineMs ?? 10_000;
    const limit = timeLimit(deadlineMs);
    return this.sharedPageWithin(call, resource, { ...options, budget: this.budgetFor(limit.signal, deadlineMs) }).finally(() => limit.done());
  }

  /** One page for one caller: budget, token, scope, then the call it shares with identical callers in flight. */
  private async sharedPageWithin<R extends UpstreamRecord>(call: UpstreamCall, resource: Resource<R>, options: ListPageOptions): Promise<ListPage<R>> {
    const tenantId = call.tenantId;
    const page: PageRequest<R> = { resource, ref: options.ref ?? null, pageSize: options.pageSize ?? UPSTREAM_PAGE_SIZE, query: options.query };
    const list = resource.name;
    const deadlineMs = this.options.deadlineMs ?? 10_000;
    const budget = options.budget ?? this.budgetFor(options.signal!, deadlineMs);
    const signal = options.signal ?? budget.signal;
    if (signal.aborted) throw cancelledError();
    try {
      budget.take(list);
    } catch (error) {
      this.observer.upstreamFailFast('budget');
      throw error;
    }
    const grant = await this.options.tokens.getToken(tenantId);
    this.observer.upstreamShard(call, grant.apiBase);
    checkScope(grant, resource);
    // The key is the exact URL the call sends: list, reference, page size and any filter.
    const key = coalescingKey(tenantId, listUrl(grant, page));
    const joined = this.inFlight.get(key);
    if (joined) this.observer.upstreamCoalesced(call);
    let fetched: ListPage<R>;
    try {
      // Each caller keeps its own deadline: the shared call retries within the latest of theirs.
      fetched = (await this.inFlight.run(
        key,
        signal,
        (shared, sharedCall) => {
          const attempts: UpstreamAttempt[] = [];
          this.attemptsOf.set(sharedCall, attempts);
          return this.fetchPage(call, page, grant, shared, sharedCall, attempts);
        },
        budget.deadlineAt,
      )) as ListPage<R>;
    } finally {
      // A request that joined saw the call's attempts only through the one that started it.
      if (joined) for (const attempt of this.attemptsOf.get(joined) ?? []) this.observer.upstreamAttempt(call, { ...attempt, shared: true });
    }
    budget.notePage(list, fetched);
    return fetched;
  }

  /**
   * The request loop of one page, one step a line: the Retry-After windows (wait, or
   * fail fast), one attempt through bulkhead and breaker, then what its answer decides:
   * a page ends the call; a 401 renews the token once (token/unauthorized.ts); a 429
   * or a shard's 503 with Retry-After opens a window; a transient fault backs off.
   * Each step that gives up throws; the others say how long to wait before trying again.
   */
  private async fetchPage<R extends UpstreamRecord>(
    caller: UpstreamCall,
    page: PageRequest<R>,
    grant: TokenGrant,
    signal: AbortSignal,
    call: SharedCallView,
    attempts: UpstreamAttempt[],
  ): Promise<ListPage<R>> {
    const { tenantId } = caller;
    const list = page.resource.name;
    const tries = this.triesOf(call, tenantId, list);
    for (;;) {
      checkScope(grant, page.resource);
      // The token's api_base, validated to an origin (checkApiBase).
      const origin = grant.apiBase;
      const gate = this.passWindows(tenantId, origin, list, tries.maxWaitMs, tries.remaining());
      if ('waitMs' in gate) {
        await this.waitBeforeRetry(list, { waitMs: gate.waitMs, reason: 'retry-after' }, signal);
        continue;
      }
      let outcome: Outcome<R>;
      try {
        outcome = await this.attempt(caller, origin, page, grant, signal, attempts);
      } catch (error) {
        this.endProbes(gate.probes, false);
        throw error;
      }
      this.endProbes(gate.probes, true);
      switch (outcome.kind) {
        case 'page':
          tries.unauthorized.served(grant);
          return outcome.page;
        case 'unauthorized':
          grant = await tries.unauthorized.refused(grant);
          break;
        case 'rate-limited':
          await this.waitBeforeRetry(list, this.afterRateLimited(tries, tenantId, outcome.retryAfterSeconds), signal);
          break;
        case 'transient':
          await this.waitBeforeRetry(list, this.afterShardFault(tries, origin, list, outcome, signal), signal);
          break;
      }
    }
  }

  /** What one page call keeps from try to try: its retry schedules, its 401 rule, its deadline. */
  private triesOf(call: SharedCallView, tenantId: string, list: string): Tries {
    return {
      maxWaitMs: (this.options.maxRetryAfterSeconds ?? 2) * 1000,
      remaining: () => call.deadlineAt() - performance.now(),
      transient: this.retryPolicy.schedule(),
      rateLimitBackoff: this.retryPolicy.schedule(this.options.maxRateLimitRetries ?? 2),
      maxRateLimitRetries: this.options.maxRateLimitRetries ?? 2,
      rateLimitRetries: 0,
      unauthorized: new UnauthorizedRule(this.options.tokens, tenantId, () => this.observer.upstreamRetry(list, 'unauthorized')),
    };
  }

  /**
   * Ends the probes a capped window let this attempt be: `answered`, the upstream's
   * answer decides (a 429 or 503 opens a new window, anything else ends it); not
   * answered (not sent, cancelled, refused before an answer), the next caller probes.
   */
  private endProbes(probes: WindowProbe[], answered: boolean): void {
    for (const { scope, key, probe } of probes) this.windows.probeDone(scope, key, probe, answered);
  }

  /**
   * A 429: with Retry-After, the tenant's window opens (`afterRetryAfter`); without, a
   * jittered backoff.
   */
  private afterRateLimited(tries: Tries, tenantId: string, retryAfterSeconds: number | undefined): NextTry {
    if (retryAfterSeconds !== undefined) {
      return this.afterRetryAfter(tries, 'tenant', tenantId, retryAfterSeconds, (kept, why) => rateLimited(tenantId, kept, why));
    }
    const wait = tries.rateLimitRetries < tries.maxRateLimitRetries ? tries.rateLimitBackoff.next(tries.remaining()) : undefined;
    if (wait === undefined) throw rateLimited(tenantId, undefined);
    tries.rateLimitRetries += 1;
    return { waitMs: wait, reason: 'rate-limited' };
  }

  /**
   * A transient fault (network error, timeout, 5xx). A 503 with Retry-After is the
   * shard asking for a pause: its window opens, as a 429's does for the tenant.
   */
  private afterShardFault(tries: Tries, origin: string, list: string, outcome: { error: UpstreamError; retryAfterSeconds?: number | undefined }, signal: AbortSignal): NextTry {
    if (outcome.retryAfterSeconds !== undefined) {
      return this.afterRetryAfter(tries, 'shard', origin, outcome.retryAfterSeconds, (kept, why) => shardBusy(origin, list, kept, why));
    }
    const wait = signal.aborted ? undefined : tries.transient.next(tries.remaining());
    if (wait === undefined) throw outcome.error;
    return { waitMs: wait, reason: 'transient' };
  }

  /**
   * A Retry-After answer (a tenant's 429, a shard's 503): its window opens and the
   * window step waits it out, or the call fails at once (`refusal`) when the retries
   * are spent, the wait is longer than a request may take, or past the caller's deadline.
   */
  private afterRetryAfter(tries: Tries, scope: WindowScope, key: string, retryAfterSeconds: number, refusal: (kept: number, why: WindowFailure) => UpstreamError): NextTry {
    const kept = this.windows.open(scope, key, retryAfterSeconds);
    const wait = kept * 1000;
    const retriesLeft = tries.rateLimitRetries < tries.maxRateLimitRetries;
    if (!retriesLeft || wait > tries.maxWaitMs || wait >= tries.remaining()) {
      // A wait we would have taken with more time left is this caller's moment, not the upstream's answer.
      throw refusal(kept, { momentary: retriesLeft && wait <= tries.maxWaitMs });
    }
    tries.rateLimitRetries += 1;
    return 'now'; // the window step waits it out
  }

  /** Waits as a step decided before the next try (reported as a retry), unless the caller goes away. */
  private async waitBeforeRetry(list: string, next: NextTry, signal: AbortSignal): Promise<void> {
    if (next === 'now') return;
    this.observer.upstreamRetry(list, next.reason);
    await sleep(next.waitMs, signal);
  }

  /**
   * The Retry-After windows of the tenant and the shard: go (with the probes a capped
   * window that ended lets through), wait `waitMs` within the request, or fail fast.
   */
  private passWindows(tenantId: string, origin: string, list: string, maxWaitMs: number, remainingMs: number): { waitMs: number } | { probes: WindowProbe[] } {
    const tenant = this.windows.check('tenant', tenantId);
    const shard = this.windows.check('shard', origin);
    const probes: WindowProbe[] = [];
    if (tenant.kind === 'probe') probes.push({ scope: 'tenant', key: tenantId, probe: tenant.probe });
    if (shard.kind === 'probe') probes.push({ scope: 'shard', key: origin, probe: shard.probe });
    // Another caller's probe is under way: it decides for everyone (1 s is our advice meanwhile).
    const tenantWait = tenant.kind === 'wait' ? tenant.remainingMs : tenant.kind === 'probing' ? Infinity : 0;
    const shardWait = shard.kind === 'wait' ? shard.remainingMs : shard.kind === 'probing' ? Infinity : 0;
    const waitMs = Math.max(tenantWait, shardWait);
    if (waitMs === 0) return { probes };
    this.endProbes(probes, false);
    if (waitMs <= maxWaitMs && waitMs < remainingMs) return { waitMs };
    this.observer.upstreamFailFast('retry-after');
    const seconds = (ms: number) => (ms === Infinity ? 1 : Math.ceil(ms / 1000));
    // A wait we would have taken with more time left (or another caller's probe under way) is this caller's moment, not the upstream's answer.
    const why = { cause: 'retry_after_window' as const, momentary: waitMs <= maxWaitMs };
    throw tenantWait >= shardWait ? rateLimited(tenantId, seconds(tenantWait), why) : shardBusy(origin, list, seconds(shardWait), why);
  }

  /** One HTTP attempt, through the tenant's bulkhead and the shard's breaker, within the attempt timeout. */
  private async attempt<R extends UpstreamRecord>(
    caller: UpstreamCall,
    origin: string,
    page: PageRequest<R>,
    grant: TokenGrant,
    signal: AbortSignal,
    attempts: UpstreamAttempt[],
  ): Promise<Outcome<R>> {
    const { tenantId } = caller;
    // The breaker is outside the bulkhead: an open breaker fails fast without queueing.
    try {
      return await this.breakers.run(origin, () => this.bulkheads.run(tenantId, signal, () => this.send(caller, grant, page, signal, attempts)));
    } catch (error) {
      if (error instanceof ShardFault) return { kind: 'transient', error: error.error, retryAfterSeconds: error.retryAfterSeconds };
      throw error;
    }
  }

  /**
   * One HTTP exchange within the attempt timeout (on top of the shared call's signal).
   * A shard fault (an attempt that ran out of time included) is thrown as a ShardFault,
   * which counts against the shard's breaker; a call cancelled because its callers went
   * away throws its own error. One function from the timer to the parsed page: each
   * frame of the attempt is held through the upstream wait.
   */
  private async send<R extends UpstreamRecord>(caller: UpstreamCall, grant: TokenGrant, page: PageRequest<R>, callSignal: AbortSignal, attempts: UpstreamAttempt[]): Promise<Outcome<R>> {
    const timed = timeLimit(this.options.attemptTimeoutMs ?? NUMERIC_SETTINGS.WFS_UPSTREAM_ATTEMPT_TIMEOUT_MS.default, callSignal);
    const signal = timed.signal;
    const list = page.resource.name;
    const report = (status: number, outcome: CallOutcome) => {
      const attempt: UpstreamAttempt = { status, durationMs: performance.now() - started, origin: grant.apiBase, outcome };
      attempts.push(attempt);
      this.observer.upstreamAttempt(caller, attempt);
    };
    // Built from this attempt's token: after a renewal the tenant may live on another shard.
    const url = listUrl(grant, page);
    const fromReference = sentPageSize(url);
    const sentSize = Number.isInteger(fromReference) && fromReference > 0 ? fromReference : page.pageSize;
    const started = performance.now();
    try {
      let response: Dispatcher.ResponseData;
      try {
        response = await request(url, {
          method: 'GET',
          dispatcher: this.options.dispatcher,
          headers: { authorization: bearer(grant), accept: 'application/json' },
          signal,
        });
      } catch (error) {
        report(0, causeOfNetworkError(error, signal));
        if (signal.aborted) return shardVerdict(ranOutOfTime(list, signal));
        if (isTooLarge(error)) throw tooLarge(list);
        // The connector refused the address (a private network): never retried.
        if (error instanceof UpstreamError) throw error;
        throw new ShardFault(new UpstreamError('UPSTREAM_UNAVAILABLE', `the upstream could not be reached for ${list} (${describeNetworkError(error)})`));
      }
      const status = response.statusCode;
      if (status !== 200) {
        // Status codes decide; error bodies are undocumented and never read.
        await response.body.dump().catch(() => undefined);
        report(status, 'http_status');
        return shardVerdict(classifyStatus(list, status, retryAfterSeconds(response.headers['retry-after'])));
      }
      let body: unknown;
      try {
        body = await readJson(response.body);
      } catch (error) {
        report(0, causeOfNetworkError(error, signal));
        if (signal.aborted) return shardVerdict(ranOutOfTime(list, signal));
        if (isTooLarge(error)) throw tooLarge(list);
        throw new ShardFault(new UpstreamError('UPSTREAM_UNAVAILABLE', `the ${list} response could not be read (${describeNetworkError(error)})`));
      }
      report(status, 'ok');
      return { kind: 'page', page: parseEnvelope(body, page.resource, page.ref, sentSize, grant.apiBase) };
    } finally {
      timed.done();
    }
  }
}

/** An outcome as the breaker must see it: a shard fault is thrown (it counts against the shard), anything else is returned. */
function shardVerdict<R>(outcome: Outcome<R>): Outcome<R> {
  if (outcome.kind === 'transient') throw new ShardFault(outcome.error, outcome.retryAfterSeconds);
  return outcome;
}

/**
 * The Authorization header of a grant, made once per token: a token of several hundred
 * characters would otherwise be copied into a new string for every call, kept through
 * the upstream wait.
 */
const bearers = new WeakMap<TokenGrant, string>();
function bearer(grant: TokenGrant): string {
  let header = bearers.get(grant);
  if (header === undefined) {
    header = `Bearer ${grant.accessToken}`;
    bearers.set(grant, header);
  }
  return header;
}

/** The URL of one page: the tenant's shard, the list's path, the reference, `page_size` and the resource's query. */
function listUrl(grant: TokenGrant, { resource, ref, pageSize, query }: PageRequest<UpstreamRecord>): string {
  const href = pageUrl(grant.apiBase, resource.path, ref, pageSize);
  if (ref !== null || !query) return href;
  const url = new URL(href);
  for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
  return url.href;
}

/**
 * An attempt whose signal fired: out of time (its own timeout, or the deadlines of
 * everyone waiting on it) is a transient fault of the shard; callers that went away
 * are no verdict on the shard at all.
 */
function ranOutOfTime(list: string, signal: AbortSignal): Outcome<never> {
  if (!isTimeoutReason(signal.reason)) throw new UpstreamError('UPSTREAM_UNAVAILABLE', `the ${list} call was cancelled`, { momentary: true });
  return { kind: 'transient', error: new UpstreamError('UPSTREAM_UNAVAILABLE', `the upstream did not answer the ${list} call in time`, { cause: 'timeout' }) };
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

/** Why a Retry-After failure happened: the window's cause, and whether only this caller's deadline made it fail. */
interface WindowFailure {
  readonly cause?: FailureCause;
  readonly momentary?: boolean;
}

function rateLimited(tenantId: string, retryAfter: number | undefined, why: WindowFailure = {}): UpstreamError {
  return new UpstreamError('UPSTREAM_RATE_LIMITED', `the upstream is rate limiting tenant ${tenantId}; retry later`, {
    status: 429,
    ...(why.cause && { cause: why.cause }),
    ...(why.momentary && { momentary: true }),
    ...(retryAfter !== undefined && { retryAfterSeconds: retryAfter }),
  });
}

function shardBusy(origin: string, list: string, retryAfter: number, why: WindowFailure = {}): UpstreamError {
  return new UpstreamError('UPSTREAM_UNAVAILABLE', `the upstream shard ${origin} is unavailable for ${list} (503); retry after ${retryAfter} s`, {
    status: 503,
    ...(why.cause && { cause: why.cause }),
    ...(why.momentary && { momentary: true }),
    retryAfterSeconds: retryAfter,
  });
}

/** Waits `ms`; rejects with the cancelled error as soon as the caller goes away. */
async function sleep(ms: number, signal: AbortSignal): Promise<void> {
  try {
    await delay(ms, undefined, { signal });
  } catch (error) {
    if ((error as Error | null)?.name === 'AbortError') throw cancelledError();
    throw error;
  }
}
