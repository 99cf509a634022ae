/**
 * Which tenant a GraphQL request acts for: from a verified JWT (WFS_JWKS_URL, keys in
 * jwks.ts) or from the trusted tenant header, with the demo default in demo mode. For a
 * WebSocket connection also: the headers identity is read from (the upgrade's,
 * completed by `connection_init`'s), its tenant checked at most once a second, and the
 * timer that checks the identity of connections with open subscriptions again.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { GraphQLError } from 'graphql';
import { jwtVerify, type JWTVerifyGetKey } from 'jose';
import { DEFAULT_LIMITS, type JwtIdentityConfig } from '../../config';
import { graphQLError } from '../errors';
import { createJwksKeys, type JwksOptions } from '../server/jwks';

/**
 * Works out which tenant a GraphQL request acts for. `verify` does the same and keeps
 * what a check of the same identity later needs (`VerifiedIdentity`), for a WebSocket
 * connection; `reads` names the headers it reads.
 */
export type IdentityResolver = ((headers: IncomingHttpHeaders) => Promise<string>) & {
  readonly verify?: (headers: IncomingHttpHeaders) => Promise<VerifiedIdentity>;
  readonly reads?: readonly string[];
};

/**
 * An identity once verified, and what checking it again needs, not the headers it came
 * in: trusted-header mode keeps the tenant id; JWT mode keeps the tenant, the token's
 * `exp` and its key's `alg` and `kid`, never the token itself. A connection keeps this
 * for its life, where it kept up to three headers of 8 KiB before.
 */
export interface VerifiedIdentity {
  readonly tenantId: string;
  /** Checks again what can change: the token's expiry, its key still in the JWKS, the tenant still configured; the tenant, or the same errors as at first. */
  recheck(): Promise<string>;
}

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

/** Demo mode's default: the tenant a request that names none is answered for. */
export interface DemoDefault {
  readonly tenantHeader: string;
  readonly defaultTenant: string;
}

/**
 * Demo mode's exception, decided here only: a request (or connection) whose tenant
 * header is missing or blank is answered for the first demo company. Identity applies
 * it (below), the answer says so (`extensions.demoTenant`: demoTenant.ts, the
 * subscribe gate), and the cache neither keeps nor shares it (cache/policy.ts): a
 * gateway that forgot the header must not keep one demo company's data as everyone's.
 * `header` reads a request header by its lower-case name, whatever holds the headers.
 */
export function answeredByDefault(demo: DemoDefault | undefined, header: (name: string) => string | readonly string[] | undefined): demo is DemoDefault {
  if (!demo) return false;
  const value = header(demo.tenantHeader);
  return !(typeof value === 'string' ? value : value?.[0])?.trim();
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
  if (options.jwt) {
    const verify = jwtVerifier(options.jwt, options, checkConfigured);
    // A token's verification outweighs what it keeps for a recheck: queries share it.
    const resolve = async (headers: IncomingHttpHeaders) => (await verify(headers)).tenantId;
    return Object.assign(resolve, { verify, reads: ['authorization'] });
  }
  // A query needs the tenant only: no recheck is made for it (the path every query takes).
  const tenantOf = headerTenant(options, checkConfigured);
  const demo = demoDefaultOf(options);
  const verify = async (headers: IncomingHttpHeaders): Promise<VerifiedIdentity> => {
    const tenantId = tenantOf(headers);
    // The demo default is the demo's own; a tenant named may be configured away.
    if (answeredByDefault(demo, (name) => headers[name])) return { tenantId, recheck: async () => tenantId };
    return { tenantId, recheck: async () => checkConfigured(tenantId) };
  };
  const resolve = async (headers: IncomingHttpHeaders) => tenantOf(headers);
  return Object.assign(resolve, { verify, reads: [options.tenantHeader.toLowerCase()] });
}

/** Verified-identity mode: the bearer JWT verified against the JWKS, the tenant from its claim. */
function jwtVerifier(jwt: JwtIdentityConfig, options: IdentityOptions, checkConfigured: (tenantId: string) => string): (headers: IncomingHttpHeaders) => Promise<VerifiedIdentity> {
  const keys = options.jwks ?? createJwksKeys(new URL(jwt.jwksUrl), { ...(options.now && { now: options.now }), ...options.jwksOptions });
  const unverified = (error: unknown) => {
    const code = (error as { code?: unknown }).code;
    return graphQLError('UNAUTHENTICATED', `the bearer token could not be verified${typeof code === 'string' && /^ERR_[A-Z_]{1,60}$/.test(code) ? ` (${code})` : ''}`);
  };
  return async (headers) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(headers.authorization ?? '');
    if (!match) throw graphQLError('UNAUTHENTICATED', 'send an Authorization: Bearer token that names your tenant');
    let claims: Record<string, unknown>;
    let key: { alg: string; kid?: string };
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
      const { alg, kid } = verified.protectedHeader;
      key = { alg, ...(kid !== undefined && { kid }) };
    } catch (error) {
      throw unverified(error);
    }
    const tenantId = claims[jwt.tenantClaim];
    if (typeof tenantId !== 'string' || tenantId === '') {
      throw graphQLError('UNAUTHENTICATED', `the bearer token has no "${jwt.tenantClaim}" claim naming the tenant`);
    }
    const exp = claims.exp as number;
    return {
      tenantId: checkConfigured(tenantId),
      // What jwtVerify would find different now: `exp` passed (with the same tolerance),
      // the key no longer in the JWKS (asked of the same key source, which fetches
      // again for a key it does not know), the tenant no longer configured.
      recheck: async () => {
        const now = Math.floor((options.now?.() ?? Date.now()) / 1000);
        if (exp <= now - JWT_CLOCK_TOLERANCE_SECONDS) throw unverified({ code: 'ERR_JWT_EXPIRED' });
        try {
          await keys(key, undefined as never);
        } catch (error) {
          throw unverified(error);
        }
        return checkConfigured(tenantId);
      },
    };
  };
}

/** Demo mode's default, as `answeredByDefault` reads it; undefined outside demo mode. */
function demoDefaultOf(options: IdentityOptions): DemoDefault | undefined {
  return options.defaultTenant ? { tenantHeader: options.tenantHeader, defaultTenant: options.defaultTenant } : undefined;
}

/**
 * Trusted-header mode reads the tenant from a header the router sets (so it must only
 * be reachable through the router, on a private network); in demo mode a request that
 * names none gets the demo default.
 */
function headerTenant(options: IdentityOptions, checkConfigured: (tenantId: string) => string): (headers: IncomingHttpHeaders) => string {
  const demo = demoDefaultOf(options);
  return (headers) => {
    if (answeredByDefault(demo, (name) => headers[name])) {
      options.onDefaultTenant?.();
      return demo.defaultTenant;
    }
    const value = headers[options.tenantHeader];
    const named = (Array.isArray(value) ? value[0] : value)?.trim();
    if (named) return checkConfigured(named);
    throw graphQLError('UNAUTHENTICATED', `send the "${options.tenantHeader}" header naming your tenant`);
  };
}

/** A connection's identity, once checked, serves its subscribes for this long (then it is checked again). */
const IDENTITY_RECHECK_MS = 1_000;

/**
 * What graphql-ws is given of a `connection_init` payload as `connectionParams`, in
 * its place: the headers of `names` (those identity reads) in the nested shape, each
 * at most `maxChars` long (`limits.gate.initHeaderChars`); nothing else the client sent, which graphql-ws
 * would keep for the connection's life. The payload's headers are read in either shape
 * clients use: `{ headers: { 'x-tenant-id': … } }` (this subgraph's, graphql-ws links)
 * or flat, `{ 'x-tenant-id': … }` (Hive Gateway's); the nested one wins a name both
 * carry. Names are matched without regard to case; only string values are read.
 */
export function initParams(payload: unknown, names: readonly string[], maxChars: number = DEFAULT_LIMITS.gate.initHeaderChars): { headers: Record<string, string> } | undefined {
  if (!isRecord(payload)) return undefined;
  const headers: Record<string, string> = {};
  const nested = isRecord(payload.headers) ? payload.headers : undefined;
  // Each source is walked by its own keys, not looked up by name, so that `X-Tenant-Id` is read too.
  for (const source of nested ? [nested, payload] : [payload]) {
    for (const key of Object.keys(source)) {
      const name = key.length <= 64 ? key.toLowerCase() : '';
      if (!names.includes(name) || headers[name] !== undefined) continue;
      const value = source[key];
      if (typeof value === 'string' && value.length <= maxChars) headers[name] = value;
    }
  }
  return { headers };
}

/**
 * The headers identity is read from (`names`, and only those): the upgrade request's,
 * completed by the `connection_init` payload's (`initParams`, each at most `maxChars`)
 * for the names the upgrade did not carry (a browser's WebSocket cannot set headers; a
 * gateway forwards them there).
 */
export function identityHeaders(upgrade: IncomingHttpHeaders, params: Readonly<Record<string, unknown>> | undefined, names: readonly string[], maxChars: number): IncomingHttpHeaders {
  const headers: IncomingHttpHeaders = {};
  const sent = initParams(params, names, maxChars)?.headers ?? {};
  for (const name of names) {
    const value = upgrade[name] ?? sent[name];
    if (value !== undefined) headers[name] = value;
  }
  return headers;
}

/**
 * One WebSocket connection's identity: what its verification kept (`VerifiedIdentity`),
 * checked again once IDENTITY_RECHECK_MS have passed since the last check (a token that
 * expired, a key withdrawn, a tenant no longer configured), shared by the subscribes
 * that arrive meanwhile. A failed check is not kept.
 */
export class ConnectionIdentity {
  private checked: { readonly tenantId: Promise<string>; readonly at: number } | undefined;

  constructor(private readonly check: () => Promise<string>) {}

  /** The identity of a connection whose verification kept `verified` (checked just now). */
  static of(verified: VerifiedIdentity): ConnectionIdentity {
    const identity = new ConnectionIdentity(() => verified.recheck());
    identity.checked = { tenantId: Promise.resolve(verified.tenantId), at: performance.now() };
    return identity;
  }

  tenant(): Promise<string> {
    const now = performance.now();
    if (this.checked && now - this.checked.at < IDENTITY_RECHECK_MS) return this.checked.tenantId;
    const tenantId = this.check();
    const checked = (this.checked = { tenantId, at: now });
    tenantId.catch(() => {
      if (this.checked === checked) this.checked = undefined;
    });
    return tenantId;
  }

  /** The next `tenant()` checks again, whatever the time. */
  forget(): void {
    this.checked = undefined;
  }
}

/** What an identity check's failure says: its code and message, or a generic UNAUTHENTICATED for anything else. */
export function identityError(error: unknown): { code: string; message: string } {
  if (error instanceof GraphQLError && typeof error.extensions.code === 'string') return { code: error.extensions.code, message: error.message };
  return { code: 'UNAUTHENTICATED', message: 'the identity could not be checked' };
}

/**
 * Checks the identity of `connections()` with open subscriptions again every `everyMs`:
 * one that lapsed (a JWT past `exp`, a key withdrawn from the JWKS, a tenant no longer
 * configured) is `lapsed` with its error, which ends its subscriptions.
 */
export function recheckIdentities(
  connections: () => Iterable<{ readonly identity: ConnectionIdentity; readonly open: number; lapsed(error: GraphQLError): void }>,
  everyMs: number,
): NodeJS.Timeout {
  const timer = setInterval(() => {
    for (const connection of connections()) {
      if (connection.open === 0) continue;
      connection.identity.forget();
      connection.identity.tenant().catch((error: unknown) => {
        const { code, message } = identityError(error);
        connection.lapsed(new GraphQLError(message, { extensions: { code } }));
      });
    }
  }, everyMs);
  timer.unref();
  return timer;
}

/** A WebSocket close reason is at most 123 bytes. */
export function closeReason(text: string): string {
  let reason = text;
  while (Buffer.byteLength(reason) > 123) reason = reason.slice(0, -2);
  return reason;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
