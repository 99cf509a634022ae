import { setTimeout as delay } from 'node:timers/promises';
import type { TenantCredentials } from '../../config';
import { NO_OBSERVER, type Observer } from '../observer';
import { UpstreamError, isUpstreamError } from '../errors';
import type { TokenGrant } from './tokenEndpoint';
import { RefusedTokens, type TokenRenewal } from './unauthorized';

export { UNAUTHORIZED_COOLDOWN_MS } from './unauthorized';

/**
 * Where replicas share tokens (Redis in production). Without one, each process
 * keeps its own tokens, which is right for a single replica.
 */
export interface SharedTokenStore {
  read(tenantId: string): Promise<TokenGrant | null>;
  write(grant: TokenGrant): Promise<void>;
  /** Removes the tenant's token only if it is still `accessToken` (compare and delete). */
  discard(tenantId: string, accessToken: string): Promise<void>;
  /** Takes the cross-replica refresh lock (or takes over one no replica wrote); returns its release, or null while another replica holds it. */
  tryLock(tenantId: string, ttlMs: number): Promise<(() => Promise<void>) | null>;
}

export interface TokenCacheOptions {
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
  /** How long, in ms, a replica waits for another replica's refresh before it fetches alone. Default 10 000. */
  readonly lockWaitMs?: number;
  /**
   * How long, in ms, the cross-replica refresh lock lives if its holder dies. It must
   * outlast the slowest token request (see `TOKEN_REQUEST_TIMEOUT_MS`). Default 30 000.
   */
  readonly lockTtlMs?: number;
  /** Poll interval, in ms, while waiting on another replica. Default 50. */
  readonly lockPollMs?: number;
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

/** At most this much of a token's life, in ms, is given up as safety margin. */
const MAX_EXPIRY_MARGIN_MS = 30_000;
/** The share of a token's life after which a request triggers a background refresh. */
const REFRESH_AHEAD_FRACTION = 0.75;

/**
 * Backoff, in ms, between token requests after transient failures (5xx, timeouts,
 * unusable answers). It grows to `max` while a still-usable token serves the queries,
 * but only to `maxWhileWaiting` while the company has none: its queries are failing,
 * and the endpoint's recovery must reach them within seconds.
 */
export const TOKEN_BACKOFF_MS = { first: 1_500, max: 15_000, maxWhileWaiting: 4_000 } as const;
/** The token endpoint refused our credentials or gave an unusable binding: ms before asking again. */
const REFUSED_CREDENTIALS_MS = 10_000;
/** The longest Retry-After from the token endpoint we honour, in ms (a hostile value must not lock a tenant out for days). */
const MAX_RETRY_AFTER_MS = 300_000;
/**
 * A query without a usable token waits on a token request at most this factor times
 * the slowest of the endpoint's recent answers, and never less than `MIN_WAIT_MS`;
 * after a failed attempt, at most `RETRY_WAIT_MS`.
 */
const WAIT_FACTOR = 3;
const MIN_WAIT_MS = 1_000;
const RETRY_WAIT_MS = 1_000;
const ANSWER_HISTORY = 5;

/**
 * When a token stops being used: shortly before `expiresAt`, by a margin that
 * shrinks with short lifetimes (10% of the life, at most 30 s), so a 4 s token is
 * still used for 3.6 s and a 900 s token for 870 s.
 */
export function usableUntil(grant: TokenGrant): number {
  const life = grant.expiresAt - grant.obtainedAt;
  return grant.expiresAt - Math.min(MAX_EXPIRY_MARGIN_MS, life * 0.1);
}

/** When a background refresh starts, so no request has to wait for the token endpoint. */
export function refreshFrom(grant: TokenGrant): number {
  return grant.obtainedAt + (grant.expiresAt - grant.obtainedAt) * REFRESH_AHEAD_FRACTION;
}

/**
 * How long, in ms, after a failed token request no other is sent: the endpoint's
 * Retry-After (429 or 503) when it gave one, a fixed wait when it refused our
 * credentials, otherwise an exponential backoff from 1.5 s to 15 s (to 4 s when
 * `waiting`: the company has no usable token).
 */
function failureWindowMs(error: UpstreamError, failedAttempts: number, waiting: boolean): number {
  const max = waiting ? TOKEN_BACKOFF_MS.maxWhileWaiting : TOKEN_BACKOFF_MS.max;
  const backoff = Math.min(max, TOKEN_BACKOFF_MS.first * 2 ** Math.max(0, failedAttempts - 1));
  if (error.details.retryAfterSeconds !== undefined) return Math.max(backoff, Math.min(MAX_RETRY_AFTER_MS, error.details.retryAfterSeconds * 1000));
  switch (error.code) {
    case 'UPSTREAM_UNAUTHORIZED':
    case 'UPSTREAM_MISCONFIGURED':
    case 'FORBIDDEN':
      return REFUSED_CREDENTIALS_MS;
    case 'UPSTREAM_RATE_LIMITED':
      return Math.max(backoff, 5_000);
    default:
      return backoff;
  }
}

/**
 * Per-tenant access tokens, in the manner of jose's remote JWKS: one token per
 * company, reused until shortly before it expires, refreshed ahead of need, one
 * pending token request per tenant (across replicas when a shared store is given)
 * cleared when it settles, sequence numbers so an older answer never overwrites a
 * newer one, typed errors (`UpstreamError.code`) and an injectable clock.
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

  /**
   * How long, in ms from its start, a query may wait on a token request: about a
   * second after a failed attempt, otherwise a few times the endpoint's recent
   * answers (at least a second). Undefined with no history: a cold tenant waits for
   * the request itself, so a slow but working endpoint still serves its first query.
   */
  private waitLimitMs(state: TenantState): number | undefined {
    if (state.failedAttempts > 0) return RETRY_WAIT_MS;
    if (state.answerTimes.length === 0) return undefined;
    return Math.max(MIN_WAIT_MS, WAIT_FACTOR * Math.max(...state.answerTimes));
  }

  private waitForFresh(state: TenantState): Promise<TokenGrant> {
    const now = this.now();
    if (!state.pending) {
      if (this.blocked(state, now)) return Promise.reject(this.failFast(state, now));
      this.refresh(state).catch(() => undefined);
    }
    const pending = state.pending!;
    const limit = this.waitLimitMs(state);
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

  private async obtain(state: TenantState): Promise<TokenGrant> {
    const store = this.options.store;
    if (!store) return this.fetch(state);
    const tenantId = state.tenant.tenantId;
    const deadline = this.now() + (this.options.lockWaitMs ?? 10_000);
    for (;;) {
      const shared = await store.read(tenantId);
      if (shared && this.acceptable(state, shared) && this.worthTaking(state, shared)) return shared;
      const release = await store.tryLock(tenantId, this.options.lockTtlMs ?? 30_000);
      if (release) {
        try {
          // Double-check: another replica may have written a token just before we locked.
          const again = await store.read(tenantId);
          if (again && this.acceptable(state, again) && this.worthTaking(state, again)) return again;
          const grant = await this.fetch(state);
          // A store that fails to keep the token must not cost us the token itself.
          await store.write(grant).catch(() => undefined);
          return grant;
        } finally {
          await release().catch(() => undefined);
        }
      }
      if (this.now() >= deadline) {
        // No token came within the wait, longer than a token request may take
        // (TOKEN_REQUEST_TIMEOUT_MS): the holder died, or the lock is not a replica's
        // at all (a sealed one put back by someone who can write to Redis). Fetch
        // alone, once, rather than fail: a lock in Redis must never lock a company out.
        const grant = await this.fetch(state);
        await store.write(grant).catch(() => undefined);
        return grant;
      }
      await delay(this.options.lockPollMs ?? 50);
    }
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
