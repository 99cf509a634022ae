/**
 * Answers a gateway may keep (docs/caching.md): every answer gets a `Cache-Control`
 * header, and a cacheable one the tags Apollo Router's response cache files it under.
 *
 * Cacheable: a query answered for one company, without any error, whose data came
 * from the upstream or from memory within the freshness window. It carries `private,
 * max-age=N`, N being what is left of the window for the oldest data it used (the
 * reader's `freshness`: pages and records, entity-index reads included), so a gateway
 * never keeps it longer than the contract allows; `private`, because it is one
 * company's (Apollo Router keeps a private answer only with `private_id`, which puts
 * the company in the key). Root fields carry `apolloCacheTags` (the company's tag of
 * every list read) and each `_entities` item `apolloEntityCacheTags` (those and the
 * record's own tag): a change a poll sees invalidates them by the list's tag.
 *
 * Everything else is `no-store`: a window of 0, an answer with any error (an item
 * skipped included), a mutation or a subscription, an answer not bound to one company
 * (introspection, `_service`, a refused identity), and demo mode's default tenant (a
 * request that named no company: a gateway forgetting the header must not keep one
 * demo company's data as everyone's).
 *
 * Why not Apollo Server's cache-control plugin: it hooks every field resolver of every
 * request (plugins.ts switches it off for that), and its policy comes from static
 * hints, while ours is the age of the data actually used, which only the reader knows.
 *
 * It runs before the shared-requests plugin (server.ts), which hands the leader's
 * header and extensions to the identical requests that take its answer; a response
 * that already has its header (such a joiner) is left as it is.
 */
import type { ApolloServerPlugin } from '@apollo/server';
import { Kind, type OperationDefinitionNode } from 'graphql';
import type { CacheTags } from '../../upstream/cacheTags';
import type { ResourceSet } from '../../upstream/resources';
import type { GraphQLContext } from '../data/context';

export const NO_STORE = 'no-store';

/** Per answer the policy tagged (its result), the extensions it had before: what it would have carried as `no-store`. */
const untagged = new WeakMap<object, { readonly extensions: unknown }>();

/**
 * The extensions an answer had before this policy added its cache tags, or undefined if
 * it added none: an answer kept whole serves them in the last second of its freshness,
 * when the plain path marks the same data `no-store` and tags nothing (wholeAnswers.ts).
 */
export function untaggedExtensions(result: object): { readonly extensions: unknown } | undefined {
  return untagged.get(result);
}

export interface CachePolicyOptions {
  /** WFS_FRESHNESS_SECONDS (0: every answer `no-store`). */
  readonly freshnessSeconds: number;
  readonly tags: CacheTags;
  readonly resources: ResourceSet;
  /** The header that names the company; demo mode answers a request without it for `defaultTenant`. */
  readonly tenantHeader: string;
  /** Demo mode's default tenant, if any. */
  readonly defaultTenant?: string | undefined;
  /** The clock the entity indexes run on (the reader's freshness is on it). */
  readonly now: () => number;
}

export function cachePolicyPlugin(options: CachePolicyOptions): ApolloServerPlugin<GraphQLContext> {
  const { freshnessSeconds, tags, resources, tenantHeader, defaultTenant, now } = options;
  const hooks: Awaited<ReturnType<NonNullable<ApolloServerPlugin<GraphQLContext>['requestDidStart']>>> = {
    async willSendResponse({ response, contextValue, operation, request }) {
      const headers = response.http.headers;
      if (headers.has('cache-control')) return;
      headers.set('cache-control', NO_STORE);
      if (freshnessSeconds === 0 || response.body.kind !== 'single' || operation?.operation !== 'query') return;
      const result = response.body.singleResult;
      if ((result.errors?.length ?? 0) > 0 || result.data === null || result.data === undefined) return;
      const tenant = contextValue.knownTenant();
      if (!tenant) return;
      if (defaultTenant !== undefined && !request.http?.headers.get(tenantHeader)?.trim()) return;
      const used = tenant.reader.freshness;
      if (used.lists.size === 0 || used.until === Infinity) return;
      const maxAge = Math.min(freshnessSeconds, Math.floor((used.until - now()) / 1000));
      if (maxAge < 1) return;
      headers.set('cache-control', `private, max-age=${maxAge}`);
      const listTags = [...used.lists].map((list) => tags.list(tenant.tenantId, list));
      untagged.set(result, { extensions: result.extensions });
      const extensions: Record<string, unknown> = { ...result.extensions };
      const entities = entityRepresentations(operation, request.variables);
      if (entities) {
        extensions.apolloEntityCacheTags = entities.map((representation) => {
          const list = representation ? resources.typed(representation.typename)?.name : undefined;
          return list && representation ? [...listTags, tags.record(tenant.tenantId, list, representation.id)] : listTags;
        });
      }
      if (!entities || operation.selectionSet.selections.length > 1) extensions.apolloCacheTags = listTags;
      result.extensions = extensions;
    },
  };
  return {
    // One shared, stateless set of hooks: no closure allocated per request.
    async requestDidStart() {
      return hooks;
    },
  };
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
