import type { IncomingHttpHeaders } from 'node:http';
import type { Observer } from '../../upstream/observer';
import type { Tracing } from './tracing';

/**
 * The spans: the GraphQL request (continuing the router's `traceparent`), each
 * upstream list call with its attempts, shard and coalescing, each token request,
 * each entity-index lookup batch. Attribute values are names, ids, origins, codes and
 * counts, never a token, client secret, cursor or header value.
 */
export function tracingObserver(tracing: Tracing): Partial<Observer> {
  return {
    upstreamCall: (call, run) => tracing.inSpan(`upstream.list ${call.list}`, { 'wfs.list': call.list, 'wfs.page_size': call.pageSize, 'wfs.retries': 0, 'wfs.coalesced': false }, run),
    upstreamAttempt(_call, attempt) {
      // An attempt of a shared call is on the span of the call that made it.
      if (!attempt.shared) tracing.noteAttempt(attempt.status);
    },
    upstreamShard(_call, apiBase) {
      let origin: string;
      try {
        origin = new URL(apiBase).origin;
      } catch {
        return;
      }
      tracing.annotate({ 'wfs.shard.origin': origin });
    },
    upstreamCoalesced: () => tracing.annotate({ 'wfs.coalesced': true }),
    tokenRequest: (tenantId, run) =>
      tracing.inSpan('upstream.token', { 'wfs.tenant': tenantId }, async (span) => {
        try {
          const result = await run();
          span.set({ 'wfs.outcome': 'ok' });
          return result;
        } catch (error) {
          const code = (error as { code?: unknown } | null)?.code;
          span.set({ 'wfs.outcome': typeof code === 'string' ? code : 'error' });
          throw error;
        }
      }),
    entityLookup: (ids, run) => tracing.inSpan('entity_index.lookup', { 'wfs.entity_index.ids': ids }, run),
    entityLookupResult: (result) => tracing.annotate({ 'wfs.entity_index.result': result }),
  };
}

/** The GraphQL request's span, continuing the caller's (the router's) `traceparent`; named once the operation is known. */
export function traceRequest<T>(tracing: Tracing, headers: IncomingHttpHeaders, run: () => Promise<T>): Promise<T> {
  return tracing.inSpan('graphql.request', {}, run, headers);
}
