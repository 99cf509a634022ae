import { setTimeout as delay } from 'node:timers/promises';
import { UPSTREAM_PAGE_SIZE } from './endpoints';
import { cancelledError } from './errors';
import type { ListPage } from './envelope';
import type { Resource, UpstreamRecord } from './resources';
import { NO_OBSERVER, type Observer, type UpstreamAttempt, type UpstreamCall } from './observer';
import type { TokenGrant } from './token/tokenEndpoint';
import { UnauthorizedRule } from './token/unauthorized';
import { ShardBreakers } from './resilience/breaker';
import { TenantBulkheads } from './resilience/bulkhead';
import { CallBudget } from './resilience/callBudget';
import { InFlight, coalescingKey, type SharedCallView } from './resilience/coalescer';
import { RetryPolicy } from './resilience/retry';
import { RetryAfterWindows } from './resilience/retryAfterWindows';
import { timeLimit } from './transport/timeLimit';
import { rateLimited, scopeMissing, shardBusy } from './call/callErrors';
import { exchange, type Outcome } from './call/exchange';
import { CLIENT_DEFAULTS, type ClientFootprint, type ListPageOptions, type WfsClientOptions } from './call/options';
import { listUrl, type PageRequest } from './call/request';
import { afterRateLimit, afterRetryAfter, afterShardFault, throughWindows, type NextTry, type Tries, type WindowKeys } from './call/retries';

export type { ListPage } from './envelope';
export { CLIENT_DEFAULTS, type ClientFootprint, type ListPageOptions, type WfsClientOptions } from './call/options';

/** One page call shared by identical callers: who started it, which page, with which token, within which signal. */
interface PageCall<R extends UpstreamRecord> {
  readonly caller: UpstreamCall;
  readonly page: PageRequest<R>;
  readonly grant: TokenGrant;
  /** The shared call's signal: aborts when every caller has gone or run out of time. */
  readonly signal: AbortSignal;
  readonly shared: SharedCallView;
  /** The call's attempts so far, reported again to each request that joined it. */
  readonly attempts: UpstreamAttempt[];
}

/**
 * The small typed client the GraphQL side uses: one method, one page of a list,
 * for one tenant. It owns the upstream's HTTP rules: bearer token from the cache,
 * the tenant's shard from `api_base`, a single renewal on 401, Retry-After honoured
 * on 429 and 503, jittered retries of transient faults, and envelope validation.
 * Here is the request loop; its steps live beside it in call/: the request
 * (`request.ts`), the exchange (`exchange.ts`), what a status means (`statusClass.ts`),
 * the errors (`callErrors.ts`) and the retry decisions (`retries.ts`). The mechanisms
 * live in resilience/: in-flight sharing (`coalescer`), the shard breaker (`breaker`),
 * the tenant bulkhead (`bulkhead`), backoff (`retry`), Retry-After windows
 * (`retryAfterWindows`), the per-request call budget (`callBudget`).
 */
export class WfsClient {
  private readonly inFlight = new InFlight<ListPage<unknown>>();
  private readonly breakers: ShardBreakers;
  private readonly bulkheads: TenantBulkheads;
  private readonly retryPolicy: RetryPolicy;
  private readonly windows: RetryAfterWindows;
  /** The attempts of each shared call so far, reported again to each request that joined it. */
  private readonly attemptsOf = new WeakMap<SharedCallView, UpstreamAttempt[]>();
  private readonly observer: Observer;
  private readonly settings: { readonly [K in keyof typeof CLIENT_DEFAULTS]: number };

  constructor(private readonly options: WfsClientOptions) {
    const observer = (this.observer = options.observer ?? NO_OBSERVER);
    this.settings = {
      maxRateLimitRetries: options.maxRateLimitRetries ?? CLIENT_DEFAULTS.maxRateLimitRetries,
      maxRetryAfterSeconds: options.maxRetryAfterSeconds ?? CLIENT_DEFAULTS.maxRetryAfterSeconds,
      deadlineMs: options.deadlineMs ?? CLIENT_DEFAULTS.deadlineMs,
      attemptTimeoutMs: options.attemptTimeoutMs ?? CLIENT_DEFAULTS.attemptTimeoutMs,
      callBudget: options.callBudget ?? CLIENT_DEFAULTS.callBudget,
    };
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
    return new CallBudget(this.settings.callBudget, signal, deadlineMs);
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
    const page: PageRequest<R> = { resource, ref: options.ref ?? null, pageSize: call.pageSize, query: options.query };
    return this.observer.upstreamCall(call, () => this.sharedPage(call, page, options));
  }

  /**
   * A call made with neither a signal nor a budget gets a deadline of its own, disarmed
   * when the call ends (AbortSignal.timeout would stay armed, with whatever still
   * listens to it, for the whole deadline).
   */
  private sharedPage<R extends UpstreamRecord>(call: UpstreamCall, page: PageRequest<R>, options: ListPageOptions): Promise<ListPage<R>> {
    // Not async: a request's call (it has a signal) goes straight on, one suspended frame fewer while it waits.
    const { budget, signal } = options;
    if (budget || signal) return this.sharedPageWithin(call, page, budget ?? this.budgetFor(signal!, this.settings.deadlineMs), signal ?? budget!.signal);
    const limit = timeLimit(this.settings.deadlineMs);
    const own = this.budgetFor(limit.signal, this.settings.deadlineMs);
    return this.sharedPageWithin(call, page, own, own.signal).finally(() => limit.done());
  }

  /**
   * One page for one caller, within its budget and signal: budget, token, scope, then
   * the call it shares with identical callers in flight.
   */
  private async sharedPageWithin<R extends UpstreamRecord>(caller: UpstreamCall, page: PageRequest<R>, budget: CallBudget, signal: AbortSignal): Promise<ListPage<R>> {
    if (signal.aborted) throw cancelledError();
    try {
      budget.take(caller.list);
    } catch (error) {
      this.observer.upstreamFailFast('budget');
      throw error;
    }
    const grant = await this.options.tokens.getToken(caller.tenantId);
    this.observer.upstreamShard(caller, grant.apiBase);
    checkScope(grant, page.resource);
    // The key is the exact URL the call sends: list, reference, page size and any filter.
    const key = coalescingKey(caller.tenantId, listUrl(grant, page));
    const joined = this.inFlight.get(key);
    if (joined) this.observer.upstreamCoalesced(caller);
    let fetched: ListPage<R>;
    try {
      // Each caller keeps its own deadline: the shared call retries within the latest of theirs.
      const start = (shared: AbortSignal, call: SharedCallView) => {
        const attempts: UpstreamAttempt[] = [];
        this.attemptsOf.set(call, attempts);
        return this.fetchPage({ caller, page, grant, signal: shared, shared: call, attempts });
      };
      fetched = (await this.inFlight.run(key, signal, start, budget.deadlineAt)) as ListPage<R>;
    } finally {
      // A request that joined saw the call's attempts only through the one that started it.
      if (joined) for (const attempt of this.attemptsOf.get(joined) ?? []) this.observer.upstreamAttempt(caller, { ...attempt, shared: true });
    }
    budget.notePage(caller.list, fetched);
    return fetched;
  }

  /**
   * The request loop of one page, one step a line: the Retry-After windows (wait, or
   * fail fast), one attempt through bulkhead and breaker, then what its outcome decides:
   * a page ends the call; a 401 renews the token once (token/unauthorized.ts); a 429
   * or a shard's 503 with Retry-After opens a window; a shard fault backs off; a
   * failure ends the call. Each step that gives up throws its error out of the call.
   */
  private async fetchPage<R extends UpstreamRecord>(call: PageCall<R>): Promise<ListPage<R>> {
    const { caller, page, signal } = call;
    const { tenantId, list } = caller;
    const tries = this.triesOf(call.shared, tenantId, list);
    let grant = call.grant;
    for (;;) {
      checkScope(grant, page.resource);
      // The token's api_base, validated to an origin (checkApiBase).
      const keys: WindowKeys = { tenantId, origin: grant.apiBase, list };
      const gate = this.windowStep(keys, tries);
      if (!('endProbes' in gate)) {
        await this.waitBeforeRetry(list, gate, signal);
        continue;
      }
      // An attempt that threw (failed, refused before an answer) was not answered.
      const outcome = await this.attempt({ ...call, grant }).catch((error: unknown) => {
        gate.endProbes(false);
        throw error;
      });
      gate.endProbes(true);
      if (outcome.kind === 'page') {
        tries.unauthorized.served(grant);
        return outcome.page;
      }
      if (outcome.kind === 'unauthorized') grant = await tries.unauthorized.refused(grant);
      else await this.waitBeforeRetry(list, this.nextTry(tries, outcome, keys, signal), signal);
    }
  }

  /**
   * The Retry-After windows of the tenant and the shard: go, with `endProbes` for the
   * probes a capped window that ended lets through (answered: the upstream's answer
   * decides, a 429 or 503 opening a new window and anything else ending it; not
   * answered, the next caller probes), or wait within the request, or fail fast.
   */
  private windowStep(keys: WindowKeys, tries: Tries): { readonly endProbes: (answered: boolean) => void } | Exclude<NextTry, 'now'> {
    const tenant = this.windows.check('tenant', keys.tenantId);
    const shard = this.windows.check('shard', keys.origin);
    const endProbes = (answered: boolean) => {
      if (tenant.kind === 'probe') this.windows.probeDone('tenant', keys.tenantId, tenant.probe, answered);
      if (shard.kind === 'probe') this.windows.probeDone('shard', keys.origin, shard.probe, answered);
    };
    const gate = throughWindows(tenant, shard, keys, tries);
    if (gate === 'go') return { endProbes };
    endProbes(false);
    if ('fail' in gate) this.observer.upstreamFailFast('retry-after');
    return gate;
  }

  /** What one page call keeps from try to try: its retry schedules, its 401 rule, its deadline. */
  private triesOf(call: SharedCallView, tenantId: string, list: string): Tries {
    const { maxRateLimitRetries, maxRetryAfterSeconds } = this.settings;
    return {
      maxWaitMs: maxRetryAfterSeconds * 1000,
      remaining: () => call.deadlineAt() - performance.now(),
      transient: this.retryPolicy.schedule(),
      rateLimitBackoff: this.retryPolicy.schedule(maxRateLimitRetries),
      maxRateLimitRetries,
      rateLimitRetries: 0,
      unauthorized: new UnauthorizedRule(this.options.tokens, tenantId, () => this.observer.upstreamRetry(list, 'unauthorized')),
    };
  }

  /**
   * After a 429 or a shard fault: with Retry-After, the tenant's (429) or the shard's
   * (503) window opens and the window step waits it out or fails; without, a backoff.
   */
  private nextTry(tries: Tries, outcome: Extract<Outcome<unknown>, { kind: 'rate-limited' | 'shard-fault' }>, keys: WindowKeys, signal: AbortSignal): NextTry {
    const { tenantId, origin, list } = keys;
    const tenant = outcome.kind === 'rate-limited';
    if (outcome.retryAfterSeconds === undefined) return tenant ? afterRateLimit(tries, tenantId) : afterShardFault(tries, outcome.error, signal.aborted);
    const kept = this.windows.open(tenant ? 'tenant' : 'shard', tenant ? tenantId : origin, outcome.retryAfterSeconds);
    return afterRetryAfter(tries, kept, (why) => (tenant ? rateLimited(tenantId, kept, why) : shardBusy(origin, list, kept, why)));
  }

  /** Waits as a step decided before the next try (reported as a retry), unless the caller goes away; a step that gave up throws its error. */
  private async waitBeforeRetry(list: string, next: NextTry, signal: AbortSignal): Promise<void> {
    if (next === 'now') return;
    if ('fail' in next) throw next.fail;
    this.observer.upstreamRetry(list, next.reason);
    await sleep(next.waitMs, signal);
  }

  /**
   * One HTTP attempt, through the tenant's bulkhead and the shard's breaker (outside
   * it: an open breaker fails fast without queueing). The breaker counts a shard fault
   * from the outcome itself; a failed outcome is thrown through it, so it counts
   * neither way (a 4xx or a caller gone is no verdict on the shard), and ends the call.
   */
  private attempt<R extends UpstreamRecord>(call: PageCall<R>): Promise<Exclude<Outcome<R>, { kind: 'failed' }>> {
    const { caller, page, grant, signal, attempts } = call;
    const report = (attempt: UpstreamAttempt) => {
      attempts.push(attempt);
      this.observer.upstreamAttempt(caller, attempt);
    };
    const options = { page, grant, signal, report, dispatcher: this.options.dispatcher, timeoutMs: this.settings.attemptTimeoutMs };
    return this.breakers.run(grant.apiBase, () => this.bulkheads.run(caller.tenantId, signal, () => exchange(options).then(endsTheCall)));
  }
}

/** A failed outcome ends the call: thrown, out of the breaker and the request loop. */
function endsTheCall<R>(outcome: Outcome<R>): Exclude<Outcome<R>, { kind: 'failed' }> {
  if (outcome.kind === 'failed') throw outcome.error;
  return outcome;
}

function checkScope(grant: TokenGrant, resource: Resource<UpstreamRecord>): void {
  const scope = resource.scope;
  if (scope && !grant.scopes.includes(scope)) throw scopeMissing(resource, scope);
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
