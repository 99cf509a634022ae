/**
 * Which tenant a GraphQL request acts for: from a verified JWT (WFS_JWKS_URL, keys in
 * jwks.ts) or from the trusted tenant header, with the demo default in demo mode.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { jwtVerify, type JWTVerifyGetKey } from 'jose';
import type { JwtIdentityConfig } from '../../config';
import { graphQLError } from '../errors';
import { createJwksKeys, type JwksOptions } from './jwks';

/** Works out which tenant a GraphQL request acts for. */
export type IdentityResolver = (headers: IncomingHttpHeaders) => Promise<string>;

export interface IdentityOptions {
  /** Verified-identity mode when set; trusted-header mode otherwise. */
  readonly jwt: JwtIdentityConfig | null;
  readonly tenantHeader: string;
  /** Demo mode: the tenant of a request that names none. */
  readonly defaultTenant?: string | undefined;
  /** Told each time a request gets the demo default tenant (demo mode only). */
  readonly onDefaultTenant?: (() => void) | undefined;
  readonly isConfigured: (tenantId: string) => boolean;
  /** For tests: a key source instead of fetching WFS_JWKS_URL. */
  readonly jwks?: JWTVerifyGetKey;
  /** How WFS_JWKS_URL is fetched and cached (tests: a short cache, a clock); `onStale` for the operator's warning. */
  readonly jwksOptions?: JwksOptions;
  /** For tests: the clock `exp` and `nbf` are checked against (epoch ms). */
  readonly now?: () => number;
}

/**
 * Only asymmetric signatures: a symmetric (HS*) key would be the public JWKS key
 * itself, which anyone can fetch and sign with; `none` is no signature at all.
 */
export const ACCEPTED_JWT_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];
/**
 * The `typ` header values of a token meant for us: a plain JWT or an OAuth access token
 * (RFC 9068), with or without `application/`. A token that carries another `typ` (an
 * ID token profile, a logout or DPoP proof, a security event) was issued for something
 * else, even when signed by the same provider; a token without `typ` is accepted.
 */
export const ACCEPTED_JWT_TYPES = ['jwt', 'at+jwt'];
/** Seconds of clock difference tolerated on `exp` and `nbf` between us and the identity provider. */
export const JWT_CLOCK_TOLERANCE_SECONDS = 30;

/**
 * Trusted-header mode reads the tenant from a header the router sets (so it must
 * only be reachable through the router, on a private network). Verified-identity
 * mode verifies the caller's `Authorization: Bearer` JWT against the JWKS and reads
 * the tenant from a claim; the header is then ignored.
 */
export function createIdentityResolver(options: IdentityOptions): IdentityResolver {
  const checkConfigured = (tenantId: string): string => {
    if (!options.isConfigured(tenantId)) {
      throw graphQLError('FORBIDDEN', `tenant "${tenantId.slice(0, 100)}" is not configured on this subgraph`);
    }
    return tenantId;
  };
  const jwt = options.jwt;
  if (jwt) {
    const keys = options.jwks ?? createJwksKeys(new URL(jwt.jwksUrl), { ...(options.now && { now: options.now }), ...options.jwksOptions });
    return async (headers) => {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(headers.authorization ?? '');
      if (!match) throw graphQLError('UNAUTHENTICATED', 'send an Authorization: Bearer token that names your tenant');
      let claims: Record<string, unknown>;
      try {
        // jose checks `exp` and `nbf` whenever present; `requiredClaims` makes `exp` a
        // must, so a token cannot be valid forever.
        const verified = await jwtVerify(match[1]!, keys, {
          issuer: jwt.issuer,
          ...(jwt.audience !== undefined && { audience: jwt.audience }),
          algorithms: ACCEPTED_JWT_ALGORITHMS,
          requiredClaims: ['exp'],
          clockTolerance: JWT_CLOCK_TOLERANCE_SECONDS,
          ...(options.now && { currentDate: new Date(options.now()) }),
        });
        claims = verified.payload;
        const typ = verified.protectedHeader.typ;
        if (typ !== undefined && !ACCEPTED_JWT_TYPES.includes(typ.toLowerCase().replace(/^application\//, ''))) {
          throw Object.assign(new Error('unexpected typ'), { code: 'ERR_JWT_TYP' });
        }
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        throw graphQLError('UNAUTHENTICATED', `the bearer token could not be verified${typeof code === 'string' && /^ERR_[A-Z_]{1,60}$/.test(code) ? ` (${code})` : ''}`);
      }
      const tenantId = claims[jwt.tenantClaim];
      if (typeof tenantId !== 'string' || tenantId === '') {
        throw graphQLError('UNAUTHENTICATED', `the bearer token has no "${jwt.tenantClaim}" claim naming the tenant`);
      }
      return checkConfigured(tenantId);
    };
  }
  return async (headers) => {
    const value = headers[options.tenantHeader];
    const tenantId = (Array.isArray(value) ? value[0] : value)?.trim();
    if (tenantId) return checkConfigured(tenantId);
    if (options.defaultTenant) {
      options.onDefaultTenant?.();
      return options.defaultTenant;
    }
    throw graphQLError('UNAUTHENTICATED', `send the "${options.tenantHeader}" header naming your tenant`);
  };
}
