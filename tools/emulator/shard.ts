import type { IncomingMessage, ServerResponse } from 'node:http';
import { faultReply } from './faults';
import { detailReply, jsonReply, send, type Reply } from './http';
import { buildEnvelope, parsePageRequest } from './paging';
import { LAST_QUERIES_KEPT, zeroCounts, type EmulatorState } from './state';
import { claimedTenant } from './tokens';
import type { EmulatorTenant } from './types';

// RFC 6750 section 3: what a bearer-protected resource says when it refuses a token.
const INVALID_TOKEN = { 'www-authenticate': 'Bearer realm="api", error="invalid_token"' };
const insufficientScope = (scope: string) => ({ 'www-authenticate': `Bearer realm="api", error="insufficient_scope", scope="${scope}"` });

/**
 * One shard server: serves every registered list (the registry's path and scope) of
 * the tenants that currently live on it, from the tenant's field named after the list.
 * Paths end with a slash, and the slash-less form is a 404 like any other path.
 */
export function createShardHandler(state: EmulatorState, shard: number) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    handle(state, shard, req, res).catch(() => send(res, detailReply(500, 'internal error')));
  };
}

async function handle(state: EmulatorState, shard: number, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const { counters } = state;
  counters.requestsByShard[shard] = (counters.requestsByShard[shard] ?? 0) + 1;
  req.resume(); // GETs carry no body we need; drain it so the socket stays reusable
  const rawUrl = req.url ?? '/';
  const url = new URL(rawUrl, 'http://emulator');
  const resource = state.resources.atPath(url.pathname);
  const list = resource?.name;
  if (!resource || !list) return reply(state, res, detailReply(404, 'Not found'));
  if (req.method !== 'GET') return reply(state, res, detailReply(405, 'Method not allowed', { allow: 'GET' }));

  counters.listRequests[list] += 1;
  const queryStart = rawUrl.indexOf('?');
  counters.lastListQueries.push(queryStart < 0 ? '' : rawUrl.slice(queryStart + 1));
  if (counters.lastListQueries.length > LAST_QUERIES_KEPT) counters.lastListQueries.splice(0, counters.lastListQueries.length - LAST_QUERIES_KEPT);

  const token = /^Bearer +(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
  const verification = token ? await state.tokens.verify(token) : undefined;
  // A refused token still names a tenant, for the counters and for tenant-scoped faults.
  const tenantId = verification?.ok ? verification.claims.tenant_id : token && claimedTenant(token);
  if (tenantId && state.tenantsById.has(tenantId)) {
    const perTenant = (counters.listRequestsByTenant[tenantId] ??= zeroCounts(state.resources));
    perTenant[list] += 1;
  }

  const fault = state.faults.take(list, tenantId);
  if (fault) {
    const injected = faultReply(fault);
    if (injected === 'hang') return;
    return reply(state, res, injected);
  }
  if (!verification?.ok) return reply(state, res, detailReply(401, verification?.reason ?? 'Authentication credentials were not provided.', INVALID_TOKEN));
  const { claims } = verification;
  const tenant = state.tenantsById.get(claims.tenant_id);
  // Bound to this shard twice over: the tenant must live here now, and the token must say so.
  if (!tenant || tenant.shard !== shard || claims.api_base !== state.shardOrigins[shard]) {
    return reply(state, res, detailReply(401, 'token not valid for this host', INVALID_TOKEN));
  }
  if (resource.scope && !claims.scope.split(' ').includes(resource.scope)) {
    return reply(state, res, detailReply(403, 'You do not have permission to perform this action.', insufficientScope(resource.scope)));
  }

  const scope = { list, tenantId: tenant.tenantId, key: state.cursorKey };
  const page = parsePageRequest(url.searchParams, scope, state.settings);
  if (typeof page === 'string') return reply(state, res, detailReply(400, page));
  const items = listOf(tenant, list) ?? [];
  const style = { format: state.settings.pageReferenceFormat, origin: state.shardOrigins[shard]!, path: url.pathname };
  let envelope = buildEnvelope(items, page, scope, style);
  if (state.rewriter) envelope = state.rewriter(envelope, { tenantId: tenant.tenantId, list });
  return reply(state, res, jsonReply(200, envelope));
}

/** A tenant's seed records of one list (its field named after the list), if it has any. */
export function listOf(tenant: EmulatorTenant, list: string): readonly unknown[] | undefined {
  const records: unknown = (tenant as unknown as Record<string, unknown>)[list];
  return Array.isArray(records) ? records : undefined;
}

async function reply(state: EmulatorState, res: ServerResponse, response: Reply): Promise<void> {
  await state.timers.delay(state.settings.latencyMs);
  if (response.status === 401) state.counters.unauthorized += 1;
  send(res, response);
}
