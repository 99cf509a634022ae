import { randomBytes, randomUUID } from 'node:crypto';
import { decodeJwt, jwtVerify, SignJWT } from 'jose';

/** The claims of an emulator access token. */
export interface TokenClaims {
  api_base: string;
  tenant_id: string;
  scope: string;
  client_id: string;
  jti: string;
  iss: string;
  iat: number;
  exp: number;
}

/** The outcome of checking a bearer token; the reason goes into the 401 body. */
export type Verification = { ok: true; claims: TokenClaims } | { ok: false; reason: string };

interface IssuedToken {
  tenantId: string;
  // Logical issue time: a counter, so a revocation and an issue in the same millisecond still order.
  seq: number;
  // Epoch ms; the JWT's `exp` is whole seconds, too coarse for short test lifetimes.
  expiresAt: number;
}

// The record of issued tokens is swept of expired ones once it grows past this, so a
// client that (wrongly) asks for a token per request cannot grow it without bound.
const SWEEP_THRESHOLD = 10_000;

/**
 * Issues and checks access tokens: HS256 JWTs signed with a key that exists only in
 * this emulator, so a token from another emulator (or a forged one) never verifies.
 */
export class TokenAuthority {
  // A Uint8Array of this realm (not a Buffer): jose checks `instanceof Uint8Array`.
  private readonly key = new Uint8Array(randomBytes(32));
  private readonly issued = new Map<string, IssuedToken>();
  private seq = 0;
  private revokedUpTo = 0;
  private readonly revokedUpToByTenant = new Map<string, number>();
  private nextSweep = SWEEP_THRESHOLD;

  constructor(
    private readonly issuer: string,
    private readonly now: () => number,
  ) {}

  async issue(input: { tenantId: string; clientId: string; apiBase: string; scope: string; lifetimeSeconds: number }): Promise<string> {
    const issuedAt = this.now();
    const expiresAt = issuedAt + input.lifetimeSeconds * 1000;
    const jti = randomUUID();
    const token = await new SignJWT({ api_base: input.apiBase, tenant_id: input.tenantId, scope: input.scope, client_id: input.clientId })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuer(this.issuer)
      .setIssuedAt(Math.floor(issuedAt / 1000))
      .setExpirationTime(Math.ceil(expiresAt / 1000))
      .setJti(jti)
      .sign(this.key);
    // Recorded after signing: a revocation that lands while we sign does not hit a token
    // nobody has seen yet (its api_base is still checked on use).
    this.issued.set(jti, { tenantId: input.tenantId, seq: ++this.seq, expiresAt });
    if (this.issued.size >= this.nextSweep) this.sweep();
    return token;
  }

  async verify(token: string): Promise<Verification> {
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(token, this.key, { algorithms: ['HS256'], issuer: this.issuer, currentDate: new Date(this.now()) }));
    } catch {
      return { ok: false, reason: 'invalid or expired token' };
    }
    const claims = payload as Partial<TokenClaims>;
    const record = typeof claims.jti === 'string' ? this.issued.get(claims.jti) : undefined;
    if (!record) return { ok: false, reason: 'unknown or expired token' };
    if (this.now() >= record.expiresAt) return { ok: false, reason: 'token expired' };
    if (record.seq <= Math.max(this.revokedUpTo, this.revokedUpToByTenant.get(record.tenantId) ?? 0)) {
      return { ok: false, reason: 'token revoked' };
    }
    if (typeof claims.api_base !== 'string' || typeof claims.tenant_id !== 'string' || typeof claims.scope !== 'string') {
      return { ok: false, reason: 'malformed token' };
    }
    return { ok: true, claims: claims as TokenClaims };
  }

  /** Refuses every token issued so far, for one tenant or for all. */
  revoke(tenantId?: string): void {
    if (tenantId === undefined) this.revokedUpTo = this.seq;
    else this.revokedUpToByTenant.set(tenantId, this.seq);
  }

  private sweep(): void {
    const now = this.now();
    for (const [jti, record] of this.issued) if (now >= record.expiresAt) this.issued.delete(jti);
    this.nextSweep = Math.max(SWEEP_THRESHOLD, this.issued.size * 2);
  }
}

/** The tenant a token claims to be for, without verifying it (only to match faults and count). */
export function claimedTenant(token: string): string | undefined {
  try {
    const tenant = decodeJwt(token).tenant_id;
    return typeof tenant === 'string' ? tenant : undefined;
  } catch {
    return undefined;
  }
}
