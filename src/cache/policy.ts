/**
 * The cache's one decision (docs/caching.md): per answer, once, inside Apollo Server's
 * `willSendResponse`, from the operation, the result, the identity and the reader's
 * freshness, what may be done with it. One value carries it (`CacheDecision`), and
 * every edge reads that value: the `Cache-Control` and `Vary` headers (`headersOf`),
 * the gateways' tags in `extensions`, the identical requests that take the answer
 * (http/sharedRequests.ts), and the store of answers kept whole (answers.ts), which
 * the HTTP handler consults before Apollo Server runs and offers the answer after it
 * is written. Nothing reads a header back to learn what was decided.
 *
 * May be kept: a query answered for one company, without any error, whose data came
 * from the upstream or from memory within the freshness window. It carries `private,
 * max-age=N`, N being what is left of the window for the oldest data it used (the
 * reader's `freshness`: pages and records, entity-index reads included), so a cache
 * never keeps it longer than the contract allows; `private`, because it is one
 * company's; and `Vary` naming what decides whose it is (the tenant header in
 * trusted-header mode, `Authorization` with verified identities), so a client's or a
 * proxy's standard HTTP cache keeps one answer per company. The router secret decides
 * nothing about identity and is not named. Root fields carry `apolloCacheTags` (the
 * company's tag of every list read) and each `_entities` item `apolloEntityCacheTags`
 * (those and the record's own tag): a change a poll sees invalidates them by the
 * list's tag (invalidation.ts).
 *
 * Everything else is `no-store`: a window of 0, an answer with any error (an item
 * skipped included), a mutation or a subscription, an answer not bound to one company
 * (introspection, `_service`, a refused identity), and demo mode's default tenant
 * (identity.ts, `answeredByDefault`).
 *
 * Why not Apollo Server's cache-control plugin: it hooks every field resolver of every
 * request (plugins.ts switches it off for that), and its policy comes from static
 * hints, while ours is the age of the data actually used, which only the reader knows.
 */
import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { ApolloServerPlugin, GraphQLRequestContextWillSendResponse } from '@apollo/server';
import { Kind, type OperationDefinitionNode } from 'graphql';
import { answeredByDefault, type DemoDefault } from '../graphql/admission/identity';
import type { GraphQLContext } from '../graphql/data/context';
import type { ResourceSet } from '../upstream/resources';
import type { CacheTags } from './tags';
import { NOT_KEPT, headersOf, taken, type CacheDecision, type CacheTicket, type KeepWhole } from './decision';
export { NOT_KEPT, headersOf, taken, type CacheDecision, type CacheTicket, type KeepWhole };


/** Whole seconds from `now` to `until`, at most the window: an answer's `max-age`. */
export function maxAgeAt(until: number, now: number, freshnessSeconds: number): number {
  return Math.max(0, Math.min(freshnessSeconds, Math.floor((until - now) / 1000)));
}

export interface CachePolicyOptions {
  /** WFS_FRESHNESS_SECONDS (0: every answer `no-store`). */
  readonly freshnessSeconds: number;
  readonly tags: CacheTags;
  readonly resources: ResourceSet;
  /**
   * The request headers that decide whose answer it is, for `Vary`: those identity reads
   * (identity.ts, `reads`): the tenant header (WFS_TENANT_HEADER) in trusted-header mode,
   * `authorization` with verified identities.
   */
  readonly identityHeaders: readonly string[];
  /** Demo mode's default tenant, if any. */
  readonly demo?: DemoDefault | undefined;
  /** The clock the entity indexes run on (the reader's freshness is on it). */
  readonly now: () => number;
}

/** The header a router sends to ask for an inline trace: such a request is worked out alone. */
const TRACE_HEADER = 'apollo-federation-include-trace';

/** What the handler knows of a request before Apollo Server runs, for `requestKey`. */
export interface RequestShape {
  readonly headers: IncomingHttpHeaders;
  /** The `bodyDigest` of a body that is one JSON object; undefined for any other (none, a batch, not JSON). */
  readonly digest: string | undefined;
  /** Whether the URL carries a query string. */
  readonly search: boolean;
}

/**
 * A body's text as the identical-request key knows it: its SHA-256, so that the key is
 * 44 characters, not a second copy of a body of up to a mebibyte held as long as the
 * request. Equal digests are equal texts (no collision of SHA-256 is known), and the
 * company is part of the key besides.
 */
export function bodyDigest(text: string): string {
  return createHash('sha256').update(text).digest('base64');
}

export class CachePolicy {
  /** `Vary` of an answer a cache may keep: what decides whose it is. */
  private readonly vary: string;

  constructor(private readonly options: CachePolicyOptions) {
    this.vary = options.identityHeaders.join(', ');
  }

  /**
   * What makes two requests identical, for sharing an execution (sharedRequests.ts) and
   * for an answer kept whole (answers.ts); undefined: the request is worked out alone.
   * Only one JSON object POSTed without a query string (a GET, a batch are executed),
   * without a trace asked for, by an identity that resolves (per request, before
   * anything is shared: a refused identity shares nothing, its error is its own) to a
   * company it names (not demo mode's default). The key: that company, the content type
   * and accept header, and the body's text exactly (`bodyDigest`).
   */
  async requestKey(context: GraphQLContext, request: RequestShape): Promise<string | undefined> {
    const { headers, digest } = request;
    if (digest === undefined || request.search) return undefined;
    if (headers[TRACE_HEADER] !== undefined || answeredByDefault(this.options.demo, (name) => headers[name])) return undefined;
    const tenantId = await context.tenant().then(
      (tenant) => tenant.tenantId,
      () => undefined,
    );
    if (tenantId === undefined || context.signal.aborted) return undefined;
    return `${tenantId}\u0000${headers['content-type'] ?? ''}\u0000${headers.accept ?? ''}\u0000${digest}`;
  }

  /**
   * The Apollo plugin that decides, and writes the decision where Apollo Server carries
   * it: the headers, and the tags in `extensions`. A request that took an identical
   * request's answer (shared requests) took its decision too, kept whole excepted.
   * It runs before the shared-requests plugin (server.ts), which hands the decision on.
   */
  plugin(): ApolloServerPlugin<GraphQLContext> {
    const hooks: Awaited<ReturnType<NonNullable<ApolloServerPlugin<GraphQLContext>['requestDidStart']>>> = {
      willSendResponse: async (requestContext) => {
        const ticket = requestContext.contextValue.cache;
        const decision = ticket?.decision ?? this.decide(requestContext, ticket?.keepAs !== undefined);
        if (ticket) ticket.decision = decision;
        const headers = requestContext.response.http.headers;
        const written = headersOf(decision);
        for (const name in written) headers.set(name, written[name]!);
      },
    };
    return {
      // One shared, stateless set of hooks: no closure allocated per request.
      async requestDidStart() {
        return hooks;
      },
    };
  }

  /** The decision for one answer; a cacheable one gets its tags in `extensions` here. `offered`: the store would keep it. */
  private decide(requestContext: GraphQLRequestContextWillSendResponse<GraphQLContext>, offered: boolean): CacheDecision {
    const { response, contextValue, operation, request } = requestContext;
    const { freshnessSeconds, tags, resources, now } = this.options;
    if (freshnessSeconds === 0 || response.body.kind !== 'single' || operation?.operation !== 'query') return NOT_KEPT;
    const result = response.body.singleResult;
    if ((result.errors?.length ?? 0) > 0 || result.data === null || result.data === undefined) return NOT_KEPT;
    const tenant = contextValue.knownTenant();
    if (!tenant || answeredByDefault(this.options.demo, (name) => request.http?.headers.get(name))) return NOT_KEPT;
    const used = tenant.reader.freshness;
    if (used.lists.size === 0 || used.until === Infinity) return NOT_KEPT;
    const maxAge = maxAgeAt(used.until, now(), freshnessSeconds);
    if (maxAge < 1) return NOT_KEPT;
    const listTags = [...used.lists].map((list) => tags.list(tenant.tenantId, list));
    const untagged = result.extensions;
    const extensions: Record<string, unknown> = { ...untagged };
    const entities = entityRepresentations(operation, request.variables);
    if (entities) {
      extensions.apolloEntityCacheTags = entities.map((representation) => {
        const list = representation ? resources.typed(representation.typename)?.name : undefined;
        return list && representation ? [...listTags, tags.record(tenant.tenantId, list, representation.id)] : listTags;
      });
    }
    if (!entities || operation.selectionSet.selections.length > 1) extensions.apolloCacheTags = listTags;
    result.extensions = extensions;
    // A request that took another's answer read nothing itself: no sources, not kept.
    const sources = offered ? used.answerSources() : undefined;
    if (!sources) return { maxAge, vary: this.vary };
    const data = result.data;
    const lastSecond = () => (result.extensions === extensions ? JSON.stringify({ data, extensions: untagged }) : undefined);
    return { maxAge, vary: this.vary, keep: { until: used.until, sources, operationName: requestContext.operationName ?? null, lastSecond } };
  }
}

/**
 * The representations of an `_entities` root field, in the order of its answer's items
 * (null for one without a string id); undefined when the operation has no such field
 * or its representations are not a variable (the router always sends them as one).
 */
function entityRepresentations(operation: OperationDefinitionNode, variables: Record<string, unknown> | undefined): Array<{ typename: string; id: string } | null> | undefined {
  for (const selection of operation.selectionSet.selections) {
    if (selection.kind !== Kind.FIELD || selection.name.value !== '_entities') continue;
    const argument = selection.arguments?.find((arg) => arg.name.value === 'representations');
    if (argument?.value.kind !== Kind.VARIABLE) return undefined;
    const value = variables?.[argument.value.name.value];
    if (!Array.isArray(value)) return undefined;
    return value.map((item: unknown) => {
      const representation = item as { __typename?: unknown; id?: unknown } | null;
      return typeof representation?.__typename === 'string' && typeof representation.id === 'string' ? { typename: representation.__typename, id: representation.id } : null;
    });
  }
  return undefined;
}
