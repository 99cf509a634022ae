/*
 * How long a token lives (docs/upstream.md, "Token lifetime"). The token
 * response's `expires_in` decides when it is usable; when it is not (missing, zero,
 * negative, not a number, absurdly large), the token's own `exp` claim does, counted
 * as `exp - iat` from when we asked (so a clock difference with the identity provider
 * changes nothing); when neither exists, a documented default. Whatever the source,
 * the lifetime is clamped, so no answer can make us ask for a token per query or keep
 * one for ever.
 */

/** Lifetime when neither `expires_in` nor the token's claims give one, in seconds. */
export const DEFAULT_TOKEN_LIFETIME_SECONDS = 300;
/**
 * The shortest lifetime we keep a token for, in seconds. Lower than the 30 s an
 * overview might suggest on purpose: a real 2 s token (seen in tests and with some
 * providers) used for 30 s would be refused with 401s; 1 s bounds token requests to
 * about one a second per tenant, never one per query.
 */
export const MIN_TOKEN_LIFETIME_SECONDS = 1;
/** The longest lifetime we trust, in seconds (24 h). */
export const MAX_TOKEN_LIFETIME_SECONDS = 86_400;

export type LifetimeSource = 'expires_in' | 'exp_claim' | 'default';

export interface TokenLifetime {
  readonly seconds: number;
  readonly source: LifetimeSource;
}

/** `expires_in` as a positive number of seconds (a string of digits counts), or undefined. */
function fromExpiresIn(value: unknown): number | undefined {
  const n = typeof value === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(value) ? Number(value) : value;
  return typeof n === 'number' && Number.isFinite(n) && n > 0 ? n : undefined;
}

/** `exp - iat` (or `exp - now` without `iat`), in seconds, when positive. */
function fromClaims(claims: Record<string, unknown>, nowMs: number): number | undefined {
  const { exp, iat } = claims;
  if (typeof exp !== 'number' || !Number.isFinite(exp)) return undefined;
  const life = typeof iat === 'number' && Number.isFinite(iat) ? exp - iat : exp - nowMs / 1000;
  return life > 0 ? life : undefined;
}

/** The lifetime to keep a token for, and where it came from (docs/upstream.md, "Token lifetime", and the logs). */
export function tokenLifetime(expiresIn: unknown, claims: Record<string, unknown>, nowMs: number): TokenLifetime {
  const declared = fromExpiresIn(expiresIn);
  const claimed = fromClaims(claims, nowMs);
  let chosen: TokenLifetime;
  if (declared !== undefined && declared <= MAX_TOKEN_LIFETIME_SECONDS) chosen = { seconds: declared, source: 'expires_in' };
  else if (claimed !== undefined) chosen = { seconds: claimed, source: 'exp_claim' };
  else if (declared !== undefined) chosen = { seconds: declared, source: 'expires_in' };
  else chosen = { seconds: DEFAULT_TOKEN_LIFETIME_SECONDS, source: 'default' };
  return { ...chosen, seconds: Math.min(MAX_TOKEN_LIFETIME_SECONDS, Math.max(MIN_TOKEN_LIFETIME_SECONDS, chosen.seconds)) };
}
