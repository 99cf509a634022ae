import type { TenantCredentials } from '../config';
import { UpstreamError, isUpstreamError } from './errors';
import type { TokenGrant } from './tokenEndpoint';

/**
 * Where replicas share tokens (Redis in production). Without one, each process
 * keeps its own tokens, which is right for a single replica.
 */
export interface SharedTokenStore {
  read(tenantId: string): Promise<TokenGrant | null>;
  write(grant: TokenGrant): Promise<void>;
  /** Removes the tenant's token only if it is still `accessToken` (compare and delete). */
  discard(tenantId: string, accessToken: string): Promise<void>;
  /** Takes the cross-replica refresh lock; returns its release, or null while another replica holds it. */
  tryLock(tenantId: string, ttlMs: number): Promise<(() => Promise<void>) | null>;
}

/** Called for each token request actually sent, with its outcome (for metrics and logs). */
export type TokenRequestListener = (tenantId: string, outcome: 'ok' | UpstreamError['code']) => void;

export interface TokenCacheOptions {
  readonly tenants: readonly TenantCredentials[];
  /** Sends one token request; in production `requestToken` bound to the auth URL and agent. */
  readonly fetchToken: (tenant: TenantCredentials) => Promise<TokenGrant>;
  readonly store?: SharedTokenStore | undefined;
  readonly now?: () => number;
  readonly onTokenRequest?: TokenRequestListener;
  /** How long, in ms, a replica waits for another replica's refresh before giving up. Default 10 000. */
  readonly lockWaitMs?: number;
  /**
   * How long, in ms, the cross-replica refresh lock lives if its holder dies. It must
   * outlast the slowest token request (see `TOKEN_REQUEST_TIMEOUT_MS`). Default 30 000.
   */
  readonly lockTtlMs?: number;
  /** Poll interval, in ms, while waiting on another replica. Default 50. */
  readonly lockPollMs?: number;
}

interface TenantState {
  readonly tenant: TenantCredentials;
  current: TokenGrant | undefined;
  pending: Promise<TokenGrant> | undefined;
  /** Tokens the upstream answered 401 to: never taken back from the shared store. */
  rejected: Set<string>;
  /** A failed token request is remembered until `until`, so a refusing endpoint is not hammered. */
  failure: { error: UpstreamError; until: number } | undefined;
  /** The token the last 401 renewal brought, and when. */
  lastRenewal?: { accessToken: string; at: number } | undefined;
}

/** At most this much of a token's life, in ms, is given up as safety margin. */
const MAX_EXPIRY_MARGIN_MS = 30_000;
/** After a renewal, ms during which a 401 on the renewed token fails instead of renewing again. */
const RENEWAL_COOLDOWN_MS = 10_000;
/** The share of a token's life after which a request triggers a background refresh. */
const REFRESH_AHEAD_FRACTION = 0.75;

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

/** How long, in ms, a failed token request is remembered before the next attempt. */
function cooldownMs(error: UpstreamError): number {
  switch (error.code) {
    case 'UPSTREAM_UNAUTHORIZED':
    case 'UPSTREAM_MISCONFIGURED':
      return 10_000;
    case 'UPSTREAM_RATE_LIMITED':
      return Math.min(60, error.details.retryAfterSeconds ?? 5) * 1000;
    default:
      return 1_000;
  }
}

/**
 * Per-tenant access tokens: one token per company, reused until shortly before it
 * expires, refreshed ahead of need, at most one token request per tenant in flight
 * (across replicas when a shared store is given), and a single shared renewal when
 * the upstream answers 401.
 */
export class TokenCache {
  private readonly states = new Map<string, TenantState>();
  private readonly now: () => number;

  constructor(private readonly options: TokenCacheOptions) {
    this.now = options.now ?? Date.now;
    for (const tenant of options.tenants) {
      this.states.set(tenant.tenantId, { tenant, current: undefined, pending: undefined, rejected: new Set(), failure: undefined });
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
      if (now >= refreshFrom(current) && !state.pending && !this.coolingDown(state)) {
        // Ahead of need: the caller goes on with the current token.
        this.refresh(state).catch(() => undefined);
      }
      return current;
    }
    state.current = undefined;
    return this.refresh(state);
  }

  /**
   * The upstream answered 401 to `rejected`: drop it (here and in the shared store)
   * and return a fresh token. Every request that saw the same 401 shares one
   * token request.
   */
  async renewAfterUnauthorized(tenantId: string, rejected: TokenGrant): Promise<TokenGrant> {
    const state = this.state(tenantId);
    const renewal = state.lastRenewal;
    if (renewal && renewal.accessToken === rejected.accessToken && this.now() - renewal.at < RENEWAL_COOLDOWN_MS) {
      // The token a renewal just brought is refused too: asking for yet another one on
      // every request would call the token endpoint per request. Fail until the cool-down ends.
      throw new UpstreamError('UPSTREAM_UNAUTHORIZED', `the upstream refuses freshly issued tokens for tenant ${tenantId} (401); check the tenant's credentials and scopes`, { status: 401 });
    }
    state.rejected.add(rejected.accessToken);
    if (state.current?.accessToken === rejected.accessToken) state.current = undefined;
    await this.options.store?.discard(tenantId, rejected.accessToken).catch(() => undefined);
    let grant = await this.getToken(tenantId);
    // A refresh that was already under way may have picked up the rejected token.
    if (grant.accessToken === rejected.accessToken) {
      state.current = undefined;
      grant = await this.refresh(state);
    }
    state.lastRenewal = { accessToken: grant.accessToken, at: this.now() };
    return grant;
  }

  private state(tenantId: string): TenantState {
    const state = this.states.get(tenantId);
    if (!state) throw new UpstreamError('FORBIDDEN', `tenant ${tenantId} is not configured on this subgraph`);
    return state;
  }

  private coolingDown(state: TenantState): boolean {
    return state.failure !== undefined && this.now() < state.failure.until;
  }

  /** Single flight: concurrent callers share one pending refresh, cleared when it settles. */
  private refresh(state: TenantState): Promise<TokenGrant> {
    if (state.pending) return state.pending;
    if (state.failure && this.coolingDown(state)) return Promise.reject(state.failure.error);
    const pending = this.obtain(state)
      .then((grant) => {
        state.current = grant;
        state.failure = undefined;
        if (!state.rejected.has(grant.accessToken)) state.rejected.clear();
        return grant;
      })
      .catch((error: unknown) => {
        const failure = isUpstreamError(error)
          ? error
          : new UpstreamError('UPSTREAM_UNAVAILABLE', `token refresh failed for tenant ${state.tenant.tenantId}`);
        state.failure = { error: failure, until: this.now() + cooldownMs(failure) };
        throw failure;
      })
      .finally(() => {
        if (state.pending === pending) state.pending = undefined;
      });
    state.pending = pending;
    return pending;
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
        throw new UpstreamError('UPSTREAM_UNAVAILABLE', `timed out waiting for another replica to refresh the token of tenant ${tenantId}`);
      }
      await new Promise((resolve) => setTimeout(resolve, this.options.lockPollMs ?? 50));
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

  private acceptable(state: TenantState, grant: TokenGrant): boolean {
    return (
      grant.tenantId === state.tenant.tenantId &&
      !state.rejected.has(grant.accessToken) &&
      this.now() < usableUntil(grant)
    );
  }

  private async fetch(state: TenantState): Promise<TokenGrant> {
    const tenantId = state.tenant.tenantId;
    try {
      const grant = await this.options.fetchToken(state.tenant);
      this.options.onTokenRequest?.(tenantId, 'ok');
      return grant;
    } catch (error) {
      this.options.onTokenRequest?.(tenantId, isUpstreamError(error) ? error.code : 'UPSTREAM_UNAVAILABLE');
      throw error;
    }
  }
}
