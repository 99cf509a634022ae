/**
 * The upstream's 401, in one place (docs/upstream.md, "Token no longer accepted"): what one call
 * does when its token is refused (`UnauthorizedRule`: renew once, shared with every
 * request that saw the same 401; the renewed token refused too ends the call with
 * UPSTREAM_UNAUTHORIZED), and what a tenant remembers of refused tokens
 * (`RefusedTokens`: each by hash until it expires, so a replayed copy is refused too;
 * and the cool-down after consecutive tokens refused on their very first use). The
 * token cache applies them to its tenant state (`renewAfterUnauthorized`,
 * `refusedAgain`, `markUsed` in tokenCache.ts).
 */
import { createHash } from 'node:crypto';
import { UpstreamError } from '../errors';
import type { TokenGrant } from './tokenEndpoint';

/** First and longest cool-down, in ms, after consecutive tokens were refused (401) on their first use. */
export const UNAUTHORIZED_COOLDOWN_MS = { first: 1_000, max: 10_000 } as const;

/** Rejected tokens remembered per tenant at most (the oldest go first). */
const MAX_REJECTED = 32;

/** What a call needs of the token cache on a 401 (TokenCache). */
export interface TokenRenewal {
  /** The upstream accepted `grant` for a call: a later 401 on it means it was revoked, not that it never worked. */
  markUsed(grant: TokenGrant): void;
  /** The upstream answered 401 to `rejected`: drop it and return a fresh token (one token request for all who saw it). */
  renewAfterUnauthorized(tenantId: string, rejected: TokenGrant): Promise<TokenGrant>;
  /** The token a renewal had just brought was refused too: drop it without asking for another now. */
  refusedAgain(tenantId: string, rejected: TokenGrant): Promise<void>;
}

/** One call's 401 rule: one renewal; a second 401 in the call is UPSTREAM_UNAUTHORIZED. */
export class UnauthorizedRule {
  private renewed = false;

  constructor(
    private readonly tokens: TokenRenewal,
    private readonly tenantId: string,
    /** Told when the call is tried again with a renewed token. */
    private readonly onRenewal: () => void = () => undefined,
  ) {}

  /** The upstream answered the call with `grant`. */
  served(grant: TokenGrant): void {
    this.tokens.markUsed(grant);
  }

  /** The upstream answered 401 to `grant`: the token to try once more with, or the call's end. */
  async refused(grant: TokenGrant): Promise<TokenGrant> {
    if (this.renewed) {
      // The renewed token is refused too: not kept for the next request to spend another 401 on.
      await this.tokens.refusedAgain(this.tenantId, grant);
      throw new UpstreamError('UPSTREAM_UNAUTHORIZED', `the upstream refused a freshly issued token for tenant ${this.tenantId} (401 twice)`, { status: 401 });
    }
    this.renewed = true;
    this.onRenewal();
    return this.tokens.renewAfterUnauthorized(this.tenantId, grant);
  }
}

/** One tenant's refused tokens, and its count towards the 401 cool-down. */
export class RefusedTokens {
  /** Tokens the upstream answered 401 to, by SHA-256, with when each expires. */
  private readonly hashes = new Map<string, number>();
  /** Consecutive tokens refused (401) before serving a single call. */
  private refusedUnused = 0;

  /** Refused tokens remembered now. */
  get size(): number {
    return this.hashes.size;
  }

  /** Remembers a refused token until it expires (a replayed copy of it is refused too). */
  remember(grant: TokenGrant, now: number): void {
    for (const [hash, expiresAt] of this.hashes) if (expiresAt <= now) this.hashes.delete(hash);
    for (const hash of this.hashes.keys()) {
      if (this.hashes.size < MAX_REJECTED) break;
      this.hashes.delete(hash);
    }
    this.hashes.set(tokenHash(grant.accessToken), grant.expiresAt);
  }

  has(accessToken: string, now: number): boolean {
    const expiresAt = this.hashes.get(tokenHash(accessToken));
    return expiresAt !== undefined && expiresAt > now;
  }

  /** A token served a call: the count towards the cool-down starts over. */
  served(): void {
    this.refusedUnused = 0;
  }

  /**
   * A token was refused on its first use: the cool-down, in ms, that starts now (1 s
   * from the second such token in a row, doubling to 10 s), or undefined.
   */
  refusedUnusedToken(): number | undefined {
    this.refusedUnused += 1;
    if (this.refusedUnused < 2) return undefined;
    return Math.min(UNAUTHORIZED_COOLDOWN_MS.max, UNAUTHORIZED_COOLDOWN_MS.first * 2 ** (this.refusedUnused - 2));
  }
}

/** A token is remembered by its hash: the list of refused tokens holds no bearer token. */
function tokenHash(accessToken: string): string {
  return createHash('sha256').update(accessToken).digest('base64url');
}
