import type { IncomingHttpHeaders } from 'node:http';
import DataLoader from 'dataloader';
import type { GraphQLError } from 'graphql';
import type { ListPage, WfsClient } from '../upstream/client';
import { filterKey, pageKey } from '../upstream/pageKey';
import type { PageRef } from '../upstream/pageReference';
import { isMalformed, type AnyResource, type ListFilter, type Resource, type ResourceSet, type UpstreamRecord } from '../upstream/resources';
import { checkConnectionArgs, FILTER_SCAN_PAGES, resolveConnection, type ConnectionArgs, type ConnectionPage } from './connections';
import type { CursorCodec } from './cursor';
import type { EntityIndexes } from './entityIndex';
import { noteCacheLookups, noteTenant } from '../observability/hits';
import { graphQLError } from './errors';
import type { IdentityResolver } from './identity';

/** What narrows a connection: a filter, and the parent record of a child connection (`Location.shifts`). */
export interface ConnectionScope<F extends ListFilter = ListFilter> {
  readonly filter?: F;
  readonly parent?: { readonly typename: string; readonly id: string };
}

/** One tenant's data, for one GraphQL request. */
export interface TenantData {
  readonly tenantId: string;
  /** The record the tenant's entity index holds for `id` now, if any: no batch, no promise. */
  held<R extends UpstreamRecord>(resource: Resource<R, any>, id: string): R | undefined;
  /** The per-request entity loader of a resource (by resource, list name or GraphQL type name). */
  loader<R extends UpstreamRecord>(resource: Resource<R, any> | string): DataLoader<string, R | null>;
  /** One page of a resource's list as a Relay connection, filtered and scoped as asked. */
  connection<R extends UpstreamRecord, F extends ListFilter>(resource: Resource<R, F>, args: ConnectionArgs, scope?: ConnectionScope<F>): Promise<ConnectionPage<R>>;
}

/** The typed context every resolver receives. */
export interface GraphQLContext {
  /** The request's tenant and its loaders; rejects with UNAUTHENTICATED or FORBIDDEN. */
  tenant(): Promise<TenantData>;
  /** The tenant once `tenant()` has resolved (undefined before): lets hot resolvers skip a promise. */
  knownTenant(): TenantData | undefined;
  /** Errors that do not fail a field (a malformed item skipped in a page); sent with the response. */
  readonly itemErrors: GraphQLError[];
}

/** Process-wide services the per-request context is built from. */
export interface ContextServices {
  readonly client: WfsClient;
  readonly cursors: CursorCodec;
  readonly indexes: EntityIndexes;
  readonly identify: IdentityResolver;
  /** The resources served: the registry's. */
  readonly resources: ResourceSet;
}

/**
 * The tenant is worked out lazily, on first use: the router's `_service` query and
 * introspection carry no tenant and must still be answered.
 */
export function createContext(services: ContextServices, headers: IncomingHttpHeaders, signal: AbortSignal): GraphQLContext {
  const itemErrors: GraphQLError[] = [];
  let tenant: Promise<TenantData> | undefined;
  let known: TenantData | undefined;
  return {
    itemErrors,
    tenant() {
      tenant ??= services.identify(headers).then((tenantId) => {
        noteTenant(tenantId);
        known = tenantData(services, tenantId, signal, itemErrors);
        return known;
      });
      return tenant;
    },
    knownTenant: () => known,
  };
}

/** The canonical text a scoped connection's cursors are bound to (`''` for a plain list). */
function scopeKey(scope: ConnectionScope | undefined): string {
  const filter = filterKey(scope?.filter);
  const parent = scope?.parent ? `${scope.parent.typename}:${scope.parent.id}` : '';
  return filter === '' && parent === '' ? '' : `${parent}|${filter}`;
}

function tenantData(services: ContextServices, tenantId: string, signal: AbortSignal, itemErrors: GraphQLError[]): TenantData {
  // Within one request the same page is fetched once, however many fields need it.
  const pages = new Map<string, Promise<ListPage<unknown>>>();
  const call = { signal, budget: services.client.budgetFor(signal) }; // one call budget and deadline per request
  const fetchPage = <R extends UpstreamRecord>(resource: Resource<R>, ref: PageRef | null, pageSize: number, query?: Readonly<Record<string, string>>): Promise<ListPage<R>> => {
    const key = pageKey(tenantId, resource.name, ref, pageSize, filterKey(query));
    let page = pages.get(key);
    noteCacheLookups('request_pages', page ? 1 : 0, page ? 0 : 1);
    if (!page) {
      page = services.client.listPage(tenantId, resource, { ref, pageSize, ...call, ...(query && { query }) });
      pages.set(key, page);
      page.catch(() => pages.delete(key));
    }
    return page as Promise<ListPage<R>>;
  };

  const resourceOf = (resource: AnyResource | string): AnyResource => {
    const found = typeof resource === 'string' ? (services.resources.named(resource) ?? services.resources.typed(resource)) : resource;
    if (!found) throw new Error(`no resource "${String(resource)}" is registered`);
    return found;
  };

  const loaders = new Map<string, DataLoader<string, unknown>>();
  const loaderOf = <R extends UpstreamRecord>(resource: Resource<R>): DataLoader<string, R | null> => {
    let loader = loaders.get(resource.name);
    if (!loader) {
      const index = services.indexes.for<R>(tenantId, resource.name);
      loader = new DataLoader<string, R | null>(
        async (ids) => {
          try {
            return await index.lookup(ids, (ref, pageSize) => fetchPage(resource, ref, pageSize));
          } catch (error) {
            return ids.map(() => error as Error);
          }
        },
        { maxBatchSize: 1000 },
      );
      loaders.set(resource.name, loader);
    }
    return loader as DataLoader<string, R | null>;
  };

  return {
    tenantId,
    held: <R extends UpstreamRecord>(resource: Resource<R, any>, id: string) => {
      const record = services.indexes.for<R>(tenantId, resource.name).peek(id);
      if (record) noteCacheLookups('entity_index', 1, 0);
      return record;
    },
    loader: <R extends UpstreamRecord>(resource: Resource<R, any> | string) => loaderOf(resourceOf(resource)) as DataLoader<string, R | null>,
    async connection<R extends UpstreamRecord, F extends ListFilter>(resource: Resource<R, F>, args: ConnectionArgs, scope: ConnectionScope<F> = {}) {
      const request = checkConnectionArgs(args);
      const list = resource.name;
      const index = services.indexes.for<R>(tenantId, list);
      const boundTo = scopeKey(scope);
      const filter = scope.filter;
      const filtered = filter !== undefined && boundTo !== '';
      if (filtered && !resource.matches) throw new Error(`the resource "${list}" was given a filter but has no matches()`);
      const query = filtered ? resource.upstreamQuery?.(filter) : undefined;
      return resolveConnection<R>(
        {
          fetchPage: async (ref, pageSize) => {
            // A filtered scan reads pages the per-tenant index may already hold.
            const held = filtered && !query ? index.page(ref, pageSize) : undefined;
            const page = held ?? (await fetchPage(resource as Resource<R>, ref, pageSize, query));
            const records = page.items.filter((item): item is R => !isMalformed(item));
            // The tenant's index learns the records (a later `_entities` or
            // `Shift.location` then needs no scan). The request's DataLoader is not
            // primed: it would allocate a promise per record for lookups that the
            // index answers anyway.
            if (query) index.prime(records);
            else index.keepPage(page, pageSize);
            return page;
          },
          decodeCursor: (cursor, argument) => services.cursors.decode(cursor, tenantId, list, argument, boundTo),
          encodeCursor: (position) => services.cursors.encode(tenantId, list, position, boundTo),
          reportMalformed: (item) => {
            itemErrors.push(graphQLError('UPSTREAM_BAD_RESPONSE', `an item of ${list} was skipped: ${item.reason}`));
          },
          ...(filtered && { filter: { matches: (record: R) => resource.matches!(record, filter), scanBound: FILTER_SCAN_PAGES } }),
        },
        request,
      );
    },
  };
}
