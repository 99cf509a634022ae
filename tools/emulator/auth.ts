import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { faultReply } from './faults';
import { detailReply, jsonReply, readBody, send, type Reply } from './http';
import type { EmulatorState } from './state';
import type { EmulatorTenant } from './types';

// Token requests are small; anything larger is refused rather than buffered.
const MAX_BODY_BYTES = 16 * 1024;

// RFC 6749 5.1/5.2: token responses, errors included, must not be cached.
const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' };

function oauthError(status: number, error: string, description: string): Reply {
  return jsonReply(status, { error, error_description: description }, NO_STORE);
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

// Compares fixed-length digests, so neither the secret's content nor its length leaks
// through timing; an unknown client costs the same comparison as a wrong secret.
function secretMatches(given: string, tenant: EmulatorTenant | undefined): boolean {
  const expected = digest(tenant?.clientSecret ?? 'no-such-client');
  return timingSafeEqual(digest(given), expected) && tenant !== undefined;
}

/** The auth server: only POST {prefix}/identity/o/api/token exists; everything else is 404. */
export function createAuthHandler(state: EmulatorState, tokenPath: string) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    handle(state, tokenPath, req, res).catch(() => send(res, detailReply(500, 'internal error')));
  };
}

async function handle(state: EmulatorState, tokenPath: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = new URL(req.url ?? '/', 'http://emulator').pathname;
  if (path !== tokenPath) {
    req.resume();
    return reply(state, res, detailReply(404, 'Not found'));
  }
  if (req.method !== 'POST') {
    req.resume();
    return reply(state, res, detailReply(405, 'Method not allowed', { allow: 'POST' }));
  }
  const body = await readBody(req, MAX_BODY_BYTES);
  const form = body === null ? undefined : new URLSearchParams(body);
  // A request that names no client asks for no token (the subgraph's start-up probe,
  // src/upstream/token/tokenEndpointCheck.ts): refused below like any, but not counted.
  if (!form || form.get('client_id')) state.counters.tokenRequests += 1;
  // The tenant is known from client_id alone (before authentication), for counters and faults.
  const tenant = form && state.tenantsByClientId.get(form.get('client_id') ?? '');
  if (tenant) state.counters.tokenRequestsByTenant[tenant.tenantId] = (state.counters.tokenRequestsByTenant[tenant.tenantId] ?? 0) + 1;
  const fault = state.faults.take('token', tenant?.tenantId);
  if (fault) {
    const injected = faultReply(fault);
    return injected === 'hang' ? undefined : reply(state, res, injected);
  }
  if (body === null) return reply(state, res, oauthError(413, 'invalid_request', 'request body too large'));
  return reply(state, res, await tokenResponse(state, req, form!));
}

async function reply(state: EmulatorState, res: ServerResponse, response: Reply): Promise<void> {
  await state.timers.delay(state.settings.latencyMs);
  send(res, response);
}

async function tokenResponse(state: EmulatorState, req: IncomingMessage, form: URLSearchParams): Promise<Reply> {
  const mediaType = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (mediaType !== 'application/x-www-form-urlencoded') {
    return oauthError(400, 'invalid_request', 'the body must be application/x-www-form-urlencoded');
  }
  const keys = [...form.keys()];
  const repeated = keys.find((key, index) => keys.indexOf(key) !== index);
  if (repeated) return oauthError(400, 'invalid_request', `parameter ${repeated} is repeated`);
  // RFC 6749 3.1: a parameter without a value is treated as omitted.
  const field = (name: string) => form.get(name) || undefined;
  const grantType = field('grant_type');
  const clientId = field('client_id');
  const clientSecret = field('client_secret');
  if (!grantType) return oauthError(400, 'invalid_request', 'grant_type is missing');
  if (!clientId || !clientSecret) return oauthError(400, 'invalid_request', 'client_id and client_secret are required in the body');

  const tenant = state.tenantsByClientId.get(clientId);
  if (!secretMatches(clientSecret, tenant) || !tenant) return oauthError(401, 'invalid_client', 'client authentication failed');
  if (grantType !== 'client_credentials') return oauthError(400, 'unsupported_grant_type', 'only client_credentials is supported');

  const requested = (field('scope') ?? '').split(' ').filter(Boolean);
  const outside = requested.filter((scope) => !tenant.grantedScopes.includes(scope));
  if (outside.length > 0) return oauthError(400, 'invalid_scope', `not granted to this client: ${outside.join(' ')}`);
  const scopes = requested.length === 0 ? tenant.grantedScopes : tenant.grantedScopes.filter((scope) => requested.includes(scope));
  const scope = scopes.join(' ');

  const lifetimeSeconds = state.settings.tokenLifetimeSeconds;
  const accessToken = await state.tokens.issue({
    tenantId: tenant.tenantId,
    clientId: tenant.clientId,
    apiBase: state.shardOrigins[tenant.shard]!,
    scope,
    lifetimeSeconds,
  });
  return jsonReply(200, { access_token: accessToken, token_type: 'Bearer', expires_in: lifetimeSeconds, scope }, NO_STORE);
}
