import type { IncomingHttpHeaders } from 'node:http';
import { createRemoteJWKSet, jwtVerify, type JWTVerifyGetKey } from 'jose';
import type { JwtIdentityConfig } from '../config';
import { graphQLError } from './errors';

/** Works out which tenant a GraphQL request acts for. */
export type IdentityResolver = (headers: IncomingHttpHeaders) => Promise<string>;

export interface IdentityOptions {
  /** Verified-identity mode when set; trusted-header mode otherwise. */
  readonly jwt: JwtIdentityConfig | null;
  readonly tenantHeader: string;
  /** Demo mode: the tenant of a request that names none. */
  readonly defaultTenant?: string | undefined;
  readonly isConfigured: (tenantId: string) => boolean;
  /** For tests: a key source instead of fetching WFS_JWKS_URL. */
  readonly jwks?: JWTVerifyGetKey;
}

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
    const keys = options.jwks ?? createRemoteJWKSet(new URL(jwt.jwksUrl), { timeoutDuration: 3_000, cooldownDuration: 30_000 });
    return async (headers) => {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(headers.authorization ?? '');
      if (!match) throw graphQLError('UNAUTHENTICATED', 'send an Authorization: Bearer token that names your tenant');
      let claims: Record<string, unknown>;
      try {
        const verified = await jwtVerify(match[1]!, keys, {
          ...(jwt.issuer !== undefined && { issuer: jwt.issuer }),
          ...(jwt.audience !== undefined && { audience: jwt.audience }),
        });
        claims = verified.payload;
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        throw graphQLError('UNAUTHENTICATED', `the bearer token could not be verified${typeof code === 'string' ? ` (${code})` : ''}`);
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
    if (options.defaultTenant) return options.defaultTenant;
    throw graphQLError('UNAUTHENTICATED', `send the "${options.tenantHeader}" header naming your tenant`);
  };
}
