import { decodeJwt } from 'jose';
import { request, type Dispatcher } from 'undici';
import type { TenantCredentials } from '../../config';
import { checkApiBase } from '../transport/apiBase';
import { UpstreamError } from '../errors';
import { describeNetworkError, readJson, retryAfterSeconds } from '../transport/http';
import { tokenLifetime } from './tokenLifetime';

/** A token as we keep it: what the token response and its claims told us. */
export interface TokenGrant {
  readonly accessToken: string;
  readonly tenantId: string;
  /** The validated `api_base` origin. */
  readonly apiBase: string;
  readonly scopes: readonly string[];
  /** Epoch milliseconds: when we asked for the token (lifetime counts from there). */
  readonly obtainedAt: number;
  /** Epoch milliseconds: obtainedAt + the lifetime `tokenLifetime` settled on. */
  readonly expiresAt: number;
}

export interface TokenRequestOptions {
  readonly authUrl: string;
  readonly dispatcher: Dispatcher;
  readonly apiBaseAllow: readonly string[];
  /** Whether a loopback api_base passes without the allow-list naming it (default true; false in production). */
  readonly apiBaseLoopback?: boolean;
  readonly signal?: AbortSignal;
  readonly now?: () => number;
}

/** The token endpoint's path under `{auth_url}` (docs/upstream.md, "Token endpoint"). */
export const TOKEN_PATH = '/identity/o/api/token';

/** `{auth_url}/identity/o/api/token`, keeping any path prefix of the auth URL. */
export function tokenUrl(authUrl: string): string {
  return `${authUrl.replace(/\/+$/, '')}${TOKEN_PATH}`;
}

/**
 * One client-credentials request (docs/upstream.md, "Token endpoint"). The secret goes only in the
 * form body. The result is checked before anyone uses it: the token must be bound
 * to the configured tenant and its `api_base` must pass `checkApiBase`.
 */
export async function requestToken(tenant: TenantCredentials, options: TokenRequestOptions): Promise<TokenGrant> {
  const now = options.now ?? Date.now;
  const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: tenant.clientId, client_secret: tenant.clientSecret });
  if (tenant.scope) form.set('scope', tenant.scope);
  const obtainedAt = now();
  let response: Dispatcher.ResponseData;
  try {
    response = await request(tokenUrl(options.authUrl), {
      method: 'POST',
      dispatcher: options.dispatcher,
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: form.toString(),
      signal: options.signal,
    });
  } catch (error) {
    throw new UpstreamError('UPSTREAM_UNAVAILABLE', `the token endpoint could not be reached for tenant ${tenant.tenantId} (${describeNetworkError(error)})`);
  }
  const body = await readJson(response.body);
  const status = response.statusCode;
  if (status !== 200) throw tokenEndpointError(tenant, status, body, retryAfterSeconds(response.headers['retry-after']));
  return parseTokenResponse(tenant, body, obtainedAt, options.apiBaseAllow, options.apiBaseLoopback ?? true);
}

function tokenEndpointError(tenant: TenantCredentials, status: number, body: unknown, retryAfter: number | undefined): UpstreamError {
  // RFC 6749 5.2 error codes are short ASCII words; anything else is not echoed.
  const oauthError = (body as { error?: unknown } | undefined)?.error;
  const reason = typeof oauthError === 'string' && /^[\w.-]{1,64}$/.test(oauthError) ? ` (${oauthError})` : '';
  if (status === 429) {
    return new UpstreamError('UPSTREAM_RATE_LIMITED', `the token endpoint is rate limiting tenant ${tenant.tenantId}`, { status, ...(retryAfter !== undefined && { retryAfterSeconds: retryAfter }) });
  }
  if (status >= 500) {
    return new UpstreamError('UPSTREAM_UNAVAILABLE', `the token endpoint answered ${status} for tenant ${tenant.tenantId}`, {
      status,
      ...(status === 503 && retryAfter !== undefined && { retryAfterSeconds: retryAfter }),
    });
  }
  if (status === 400 || status === 401 || status === 403) {
    // Messages reach API clients: no configuration names here. The operator's hint
    // (which file to check) is logged by the token cache's listener (app.ts).
    return new UpstreamError('UPSTREAM_UNAUTHORIZED', `the token endpoint refused the credentials of tenant ${tenant.tenantId}${reason}`, { status });
  }
  return new UpstreamError('UPSTREAM_BAD_RESPONSE', `the token endpoint answered ${status} for tenant ${tenant.tenantId}`, { status });
}

/**
 * The longest access token and granted scope kept. The upstream documents neither; a
 * JWT is a few hundred bytes to a few KB, and the token goes out as a header that
 * servers commonly cap at 8-16 KB. Without a bound, a broken or hostile identity
 * provider could hand each company a token of megabytes (the response cap is 8 MiB),
 * kept in memory and Redis per company and sent with every call.
 */
export const MAX_ACCESS_TOKEN_LENGTH = 16_384;
export const MAX_SCOPE_LENGTH = 4_096;

function parseTokenResponse(tenant: TenantCredentials, body: unknown, obtainedAt: number, allowList: readonly string[], loopback: boolean): TokenGrant {
  const bad = (why: string): never => {
    throw new UpstreamError('UPSTREAM_BAD_RESPONSE', `the token response for tenant ${tenant.tenantId} is unusable: ${why}`);
  };
  if (typeof body !== 'object' || body === null) return bad('not a JSON object');
  const { access_token: accessToken, token_type: tokenType, expires_in: expiresIn, scope } = body as Record<string, unknown>;
  if (typeof accessToken !== 'string' || accessToken.length === 0) return bad('no access_token');
  if (accessToken.length > MAX_ACCESS_TOKEN_LENGTH) return bad(`access_token is longer than ${MAX_ACCESS_TOKEN_LENGTH} characters`);
  if (typeof scope === 'string' && scope.length > MAX_SCOPE_LENGTH) return bad(`scope is longer than ${MAX_SCOPE_LENGTH} characters`);
  if (typeof tokenType === 'string' && tokenType.toLowerCase() !== 'bearer') bad(`token_type ${JSON.stringify(tokenType).slice(0, 40)} is not Bearer`);

  let claims: Record<string, unknown>;
  try {
    claims = decodeJwt(accessToken);
  } catch {
    return bad('access_token is not a JWT');
  }
  // RFC 6749 5.1: when `scope` is omitted it is the scope that was requested.
  const granted = typeof scope === 'string' ? scope : tenant.scope;
  // Tenant ids are UUID-like: compared without regard to case.
  if (typeof claims.tenant_id !== 'string' || claims.tenant_id.toLowerCase() !== tenant.tenantId.toLowerCase()) {
    throw new UpstreamError('UPSTREAM_MISCONFIGURED', `the token issued for tenant ${tenant.tenantId} is bound to another tenant`);
  }
  const apiBase = checkApiBase(claims.api_base, allowList, loopback);
  // Counted from when we asked, whatever the source: clock skew with the provider does not matter.
  const lifetime = tokenLifetime(expiresIn, claims, obtainedAt).seconds;
  return {
    accessToken,
    tenantId: tenant.tenantId,
    apiBase,
    scopes: granted.split(/\s+/).filter(Boolean),
    obtainedAt,
    expiresAt: obtainedAt + lifetime * 1000,
  };
}
