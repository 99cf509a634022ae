/**
 * The token cache (`TokenCache`), the entry of token/: what a company's token is now,
 * when a token request is sent, and what a 401 does to the token. The moments it acts
 * on are named and reasoned in tokenMoments.ts, the one token request per company
 * across replicas is sharedRefresh.ts, and the rules of a 401 (the tokens refused, the
 * cool-down) are unauthorized.ts, applied here to the tenant's state.
 */
import type { TenantCredentials } from '../../config';
import { NO_OBSERVER, type Observer } from '../observer';
import { UpstreamError, isUpstreamError } from '../errors';
import { refreshThroughStore, type SharedRefreshOptions, type SharedTokenStore } from './sharedRefresh';
import type { TokenGrant } from './tokenEndpoint';
import { ANSWER_HISTORY, failureWindowMs, refreshFrom, usableUntil, waitLimitMs } from './tokenMoments';
import { RefusedTokens, type TokenRenewal } from './unauthorized';

export { UNAUTHORIZED_COOLDOWN_MS } from './unauthorized';

/** The token cache's parts and bounds; the waits on another replica's refresh are sharedRefresh.ts's. */
export interface TokenCacheOptions extends SharedRefreshOptions {
  readonly tenants: readonly TenantCredentials[];
  /** Sends one token request; in production `requestToken` bound to the auth URL and agent. */
  readonly fetchToken: (tenant: TenantCredentials) => Promise<TokenGrant>;
  readonly store?: SharedTokenStore | undefined;
  /** Epoch milliseconds. Default `Date.now`; tests freeze it. */
  readonly now?: () => number;
  /**
   * Told of each token request actually sent (`tokenRequest`, `tokenRequestEnded`: its
   * outcome, `ok` or the error code, and the error, whose message names no secret).
   */
  readonly observer?: Observer;
}

interface PendingRefresh {
  readonly promise: Promise<TokenGrant>;
  /** Epoch ms when it started: a query does not wait on a request that has outlived the endpoint's usual answer time. */
  readonly startedAt: number;
  readonly seq: number;
}

interface TenantState {
  readonly tenant: TenantCredentials;
  current: TokenGrant | undefined;
  /** The current token has served at least one successful call (see `markUsed`). */
  currentUsed: boolean;
  pending: PendingRefresh | undefined;
  /** Sequence numbers: an older refresh never overwrites the result of a newer one. */
  seq: number;
  appliedSeq: number;
  /**
   * Tokens the upstream answered 401 to (unauthorized.ts): never taken back from the
   * shared store while they live, whatever token came since; and the 401 cool-down count.
   */
  readonly refused: RefusedTokens;
  /** The newest `obtainedAt` of any token this replica has held: an older shared record is a replay. */
  newestObtainedAt: number;
  /** While `until` is ahead, no token request is sent and a query without a usable token fails fast. */
  failure: { error: UpstreamError; until: number } | undefined;
  /** Consecutive failed token requests (transient), for the backoff. */
  failedAttempts: number;
  /** How long, in ms, the last few successful token requests took. */
  answerTimes: number[];
}

/**
 * Per-tenant access tokens, in the manner of jose's remote JWKS: one token per
 * company, reused until shortly before it expires (`usableUntil`), refreshed ahead of
 * need (`refreshFrom`), one pending token request per tenant (across replicas when a
 * shared store is given) cleared when it settles, sequence numbers so an older answer
 * never overwrites a newer one, typed errors (`UpstreamError.code`) and an injectable
 * clock.
 *
 * Faults of the token endpoint never cost a request per query: after a failure no
 * token request is sent until its window ends (Retry-After, or a growing backoff),
 * and a query that has no usable token does not wait on a request that has outlived
 * the endpoint's usual answer time (that request goes on, and serves the next query).
 */
export class TokenCache implements TokenRenewal {
  private readonly states = new Map<string, TenantState>();
  private readonly now: () => number;

  constructor(private readonly options: TokenCacheOptions) {
    this.now = options.now ?? Date.now;
    for (const tenant of options.tenants) {
      this.states.set(tenant.tenantId, {
        tenant,
        current: undefined,
        currentUsed: false,
        pending: undefined,
        seq: 0,
        appliedSeq: 0,
        refused: new RefusedTokens(),
        newestObtainedAt: 0,
        failure: undefined,
        failedAttempts: 0,
        answerTimes: [],
      });
    }
  }

  hasTenant(tenantId: string): boolean {
    return this.states.has(tenantId);
  }

  /** A usable token for the tenant; waits only when there is none yet (or it expired). */
  async getToken(tenantId: string): Promise<TokenGrant> {
    const state = this.state(tenantId);
    const current = state.current;
    const now = this.now();
    if (current && now < usableUntil(current)) {
      if (now >= refreshFrom(current) && !state.pending && !this.blocked(state, now)) {
        // Ahead of need: the caller goes on with the current token.
        this.refresh(state).catch(() => undefined);
      }
      return current;
    }
    if (current) this.dropCurrent(state);
    return this.waitForFresh(state);
  }

  /** The upstream accepted `grant` for a call: a later 401 on it means it was revoked, not that it never worked. */
  markUsed(grant: TokenGrant): void {
    const state = this.states.get(grant.tenantId);
    if (!state) return;
    if (state.current?.accessToken === grant.accessToken) state.currentUsed = true;
    state.refused.served();
  }

  /**
   * The upstream answered 401 to `rejected`: drop it (here and in the shared store)
   * and return a fresh token. Every request that saw the same 401 shares one token
   * request. A token that had served calls was revoked: it is renewed at once. A
   * token refused on its first use after another such one (wrong credentials, clock
   * trouble) starts a cool-down (1 s, doubling to 10 s) with no token request.
   */
  async renewAfterUnauthorized(tenantId: string, rejected: TokenGrant): Promise<TokenGrant> {
    const state = this.state(tenantId);
    if (state.current?.accessToken !== rejected.accessToken) {
      // Another request saw this 401 first (or a refresh replaced the token): use what it brought.
      this.remember(state, rejected);
      return this.unrejected(state, await this.getToken(tenantId));
    }
    const cooldown = await this.drop(state, rejected);
    if (cooldown) throw cooldown;
    return this.unrejected(state, await this.waitForFresh(state));
  }

  /**
   * The upstream refused `rejected` too, the token a renewal had just brought (a
   * second 401 in one request): drop it, so the next request does not spend one more
   * 401 on it, without asking for another now (the request fails; the next one asks).
   */
  async refusedAgain(tenantId: string, rejected: TokenGrant): Promise<void> {
    const state = this.states.get(tenantId);
    if (!state) return;
    if (state.current?.accessToken === rejected.accessToken) await this.drop(state, rejected);
    else this.remember(state, rejected);
  }

  /**
   * Drops the current token, which got a 401. A token that never served a call
   * counts towards the cool-down; returns the cool-down's error when one starts.
   */
  private async drop(state: TenantState, rejected: TokenGrant): Promise<UpstreamError | undefined> {
    const wasUsed = state.currentUsed;
    this.remember(state, rejected);
    this.dropCurrent(state);
    await this.options.store?.discard(state.tenant.tenantId, rejected.accessToken).catch(() => undefined);
    if (wasUsed) return undefined;
    const ms = state.refused.refusedUnusedToken();
    if (ms === undefined) return undefined;
    const error = new UpstreamError('UPSTREAM_UNAUTHORIZED', `the upstream refuses freshly issued tokens for tenant ${state.tenant.tenantId} (401)`, { status: 401 });
    state.failure = { error, until: this.now() + ms };
    return error;
  }

  /** `grant`, unless it is a token already refused (a refresh under way may have picked it up): then a fresh one. */
  private async unrejected(state: TenantState, grant: TokenGrant): Promise<TokenGrant> {
    if (!this.isRejected(state, grant.accessToken)) return grant;
    if (state.current?.accessToken === grant.accessToken) this.dropCurrent(state);
    return this.waitForFresh(state);
  }

  /** Remembers a refused token until it expires (a replayed copy of it is refused too). */
  private remember(state: TenantState, grant: TokenGrant): void {
    state.refused.remember(grant, this.now());
  }

  private isRejected(state: TenantState, accessToken: string): boolean {
    return state.refused.has(accessToken, this.now());
  }

  private state(tenantId: string): TenantState {
    const state = this.states.get(tenantId);
    if (!state) throw new UpstreamError('FORBIDDEN', `tenant ${tenantId} is not configured on this subgraph`);
    return state;
  }

  private dropCurrent(state: TenantState): void {
    state.current = undefined;
    state.currentUsed = false;
  }

  private blocked(state: TenantState, now: number): boolean {
    return state.failure !== undefined && now < state.failure.until;
  }

  /** The remembered failure, with the seconds left of its window when the endpoint named one. */
  private failFast(state: TenantState, now: number): UpstreamError {
    const { error, until } = state.failure!;
    if (error.details.retryAfterSeconds === undefined) return error;
    return new UpstreamError(error.code, error.message, { ...error.details, retryAfterSeconds: Math.max(1, Math.ceil((until - now) / 1000)) });
  }

  private waitForFresh(state: TenantState): Promise<TokenGrant> {
    const now = this.now();
    if (!state.pending) {
      if (this.blocked(state, now)) return Promise.reject(this.failFast(state, now));
      this.refresh(state).catch(() => undefined);
    }
    const pending = state.pending!;
    const limit = waitLimitMs(state.failedAttempts, state.answerTimes);
    if (limit === undefined) return pending.promise;
    const remaining = pending.startedAt + limit - now;
    const gaveUp = () =>
      new UpstreamError('UPSTREAM_UNAVAILABLE', `the token endpoint has not answered for tenant ${state.tenant.tenantId} yet; retry shortly`, { momentary: true });
    if (remaining <= 0) return Promise.reject(gaveUp());
    return new Promise<TokenGrant>((resolve, reject) => {
      // The request goes on after we stop waiting: its answer serves the next query.
      const timer = setTimeout(() => reject(gaveUp()), remaining);
      timer.unref?.();
      pending.promise.then(
        (grant) => {
          clearTimeout(timer);
          resolve(grant);
        },
        (error: unknown) => {
          clearTimeout(timer);
          reject(error);
        },
      );
    });
  }

  /** Single flight: concurrent callers share one pending refresh, cleared when it settles. */
  private refresh(state: TenantState): Promise<TokenGrant> {
    if (state.pending) return state.pending.promise;
    const seq = ++state.seq;
    const promise = this.obtain(state)
      .then((grant) => {
        state.failure = undefined;
        state.failedAttempts = 0;
        state.newestObtainedAt = Math.max(state.newestObtainedAt, grant.obtainedAt);
        if (seq > state.appliedSeq) {
          state.appliedSeq = seq;
          if (state.current?.accessToken !== grant.accessToken) {
            state.current = grant;
            state.currentUsed = false;
          }
        }
        return grant;
      })
      .catch((error: unknown) => {
        const failure = isUpstreamError(error)
          ? error
          : new UpstreamError('UPSTREAM_UNAVAILABLE', `token refresh failed for tenant ${state.tenant.tenantId}`);
        state.failedAttempts += 1;
        const now = this.now();
        const waiting = state.current === undefined || now >= usableUntil(state.current);
        state.failure = { error: failure, until: now + failureWindowMs(failure, state.failedAttempts, waiting) };
        throw failure;
      })
      .finally(() => {
        if (state.pending?.seq === seq) state.pending = undefined;
      });
    state.pending = { promise, startedAt: this.now(), seq };
    return promise;
  }

  /** A token from the endpoint, through the replicas' shared store when there is one (sharedRefresh.ts). */
  private obtain(state: TenantState): Promise<TokenGrant> {
    const store = this.options.store;
    if (!store) return this.fetch(state);
    return refreshThroughStore(
      store,
      {
        tenantId: state.tenant.tenantId,
        takes: (grant) => this.acceptable(state, grant) && this.worthTaking(state, grant),
        fetch: () => this.fetch(state),
        now: this.now,
      },
      this.options,
    );
  }

  /**
   * A shared token is worth taking instead of fetching when we have none, or when it
   * is not itself due for refresh: otherwise a refresh ahead of need would only pick
   * up the same ageing token again.
   */
  private worthTaking(state: TenantState, grant: TokenGrant): boolean {
    return state.current === undefined || this.now() < refreshFrom(grant);
  }

  /**
   * A shared record is acceptable when it is bound to the tenant, still usable, not a
   * token refused before, and not older than the newest token this replica has held:
   * whoever can write to Redis (without the key) can only put back records sealed
   * earlier, and an older one is exactly such a replay.
   */
  private acceptable(state: TenantState, grant: TokenGrant): boolean {
    return (
      grant.tenantId === state.tenant.tenantId &&
      !this.isRejected(state, grant.accessToken) &&
      grant.obtainedAt >= state.newestObtainedAt &&
      this.now() < usableUntil(grant)
    );
  }

  /** Refused tokens remembered now, over all tenants (tests check they stay bounded). */
  get rejectedCount(): number {
    let count = 0;
    for (const state of this.states.values()) count += state.refused.size;
    return count;
  }

  private async fetch(state: TenantState): Promise<TokenGrant> {
    const tenantId = state.tenant.tenantId;
    const observer = this.options.observer ?? NO_OBSERVER;
    const started = this.now();
    try {
      const grant = await observer.tokenRequest(tenantId, () => this.options.fetchToken(state.tenant));
      state.answerTimes = [...state.answerTimes.slice(1 - ANSWER_HISTORY), this.now() - started];
      observer.tokenRequestEnded(tenantId, 'ok');
      return grant;
    } catch (error) {
      const failure = isUpstreamError(error) ? error : undefined;
      observer.tokenRequestEnded(tenantId, failure ? failure.code : 'UPSTREAM_UNAVAILABLE', failure);
      throw error;
    }
  }
}
