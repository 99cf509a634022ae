/**
 * One tenant's data for one GraphQL request (`TenantData`), assembled from the pieces
 * around it: the tenant's entity indexes and its grant, checked once per request and
 * list; records served straight from memory (`held`); the entity loaders (loaders.ts);
 * and connection assembly, which turns connection arguments and a scope (filter,
 * parent) into pages read through the request's page cache (pageCache.ts) and cursors
 * bound to tenant, list and scope.
 */
import type DataLoader from 'dataloader';
import type { GraphQLError } from 'graphql';
import type { WfsClient } from '../../upstream/client';
import { filterKey } from '../../upstream/reading/pageKey';
import { isMalformed, type AnyResource, type ListFilter, type Resource, type ResourceSet, type UpstreamRecord } from '../../upstream/resources';
import { NO_OBSERVER, type Observer } from '../../upstream/observer';
import { graphQLError } from '../errors';
import { checkConnectionArgs, FILTER_SCAN_PAGES, resolveConnection, type ConnectionArgs, type ConnectionPage } from './connections';
import type { CursorCodec } from './cursor';
import type { EntityIndex, EntityIndexes } from '../../upstream/reading/entityIndex';
import { createEntityLoaders } from './loaders';
import { createRequestPages } from '../../upstream/reading/pageCache';

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
  /**
   * The request's response is out: forget its pages, loaders and checks. These maps
   * were made when the request began and, after its upstream wait, usually sit in V8's
   * old generation, whose dead objects are only noticed by a full collection; until
   * then whatever they point to would be kept, and promoted, with them.
   */
  release(): void;
}

/** Process-wide services a tenant's data is read through. */
export interface DataServices {
  readonly client: WfsClient;
  readonly cursors: CursorCodec;
  readonly indexes: EntityIndexes;
  /** The resources served: the registry's. */
  readonly resources: ResourceSet;
  /** Where the data layer reports tenants and cache lookups. Default: nowhere. */
  readonly observer?: Observer;
}

/** The canonical text a scoped connection's cursors are bound to (`''` for a plain list). */
function scopeKey(scope: ConnectionScope | undefined): string {
  const filter = filterKey(scope?.filter);
  const parent = scope?.parent ? `${scope.parent.typename}:${scope.parent.id}` : '';
  return filter === '' && parent === '' ? '' : `${parent}|${filter}`;
}

/** `itemErrors` receives the errors that do not fail a field (a malformed item skipped in a page). */
export function createTenantData(services: DataServices, tenantId: string, signal: AbortSignal, itemErrors: GraphQLError[]): TenantData {
  const observer = services.observer ?? NO_OBSERVER;
  let heldRecordsRead = 0;

  // Once per request and list: the tenant's index, again from the set if it was
  // released meanwhile (evicted or swept), so a request never fills a dropped one.
  const indexes = new Map<string, EntityIndex<UpstreamRecord>>();
  const indexOf = <R extends UpstreamRecord>(resource: Resource<R, any>): EntityIndex<R> => {
    let index = indexes.get(resource.name);
    if (!index || index.isReleased) {
      index = services.indexes.for<UpstreamRecord>(tenantId, resource.name);
      indexes.set(resource.name, index);
    }
    return index as EntityIndex<R>;
  };

  // Within one request the same page is fetched once, however many fields need it.
  const pages = createRequestPages({ client: services.client, tenantId, signal, observer, indexOf });

  // Data served from memory is checked against the tenant's current grant, as a call
  // would be: a withdrawn scope (say `shifts.read`) stops it at once, not when the
  // index expires. Once per request and list; lists without a scope skip it.
  const authorizations = new Map<string, Promise<void>>();
  const authorized = new Set<string>();
  const authorize = (resource: AnyResource): Promise<void> | undefined => {
    if (!resource.scope || authorized.has(resource.name)) return undefined;
    let pending = authorizations.get(resource.name);
    if (!pending) {
      pending = services.client.authorize(tenantId, resource).then(() => void authorized.add(resource.name));
      authorizations.set(resource.name, pending);
      pending.catch(() => authorizations.delete(resource.name));
    }
    return pending;
  };

  const loaders = createEntityLoaders({ resources: services.resources, pages, indexOf, authorize });

  return {
    tenantId,
    held: <R extends UpstreamRecord>(resource: Resource<R, any>, id: string) => {
      // Resolving many entities from memory is a loop too: checked every so often.
      if (++heldRecordsRead % HELD_RECORDS_PER_CHECK === 0) pages.stillWanted();
      // Not yet authorized in this request: the loader checks, then answers.
      if (resource.scope && !authorized.has(resource.name)) return undefined;
      const record = indexOf(resource).peek(id);
      if (record) observer.cacheLookup('entity_index', 1, 0);
      return record;
    },
    loader: loaders.loader,
    release() {
      pages.release();
      loaders.release();
      indexes.clear();
      authorizations.clear();
      authorized.clear();
    },
    async connection<R extends UpstreamRecord, F extends ListFilter>(resource: Resource<R, F>, args: ConnectionArgs, scope: ConnectionScope<F> = {}) {
      const request = checkConnectionArgs(args);
      const list = resource.name;
      const index = indexOf(resource);
      const boundTo = scopeKey(scope);
      const filter = scope.filter;
      const filtered = filter !== undefined && boundTo !== '';
      if (filtered && !resource.matches) throw new Error(`the resource "${list}" was given a filter but has no matches()`);
      const query = filtered ? resource.upstreamQuery?.(filter) : undefined;
      // A filtered scan reads pages the per-tenant index may already hold.
      const fromIndex = filtered && !query;
      if (fromIndex) await authorize(resource as AnyResource);
      return resolveConnection<R>(
        {
          fetchPage: async (ref, pageSize) => {
            const page = await pages.read(resource as Resource<R>, ref, pageSize, query, fromIndex);
            // The tenant's index learns the records (a later `_entities` or
            // `Shift.location` then needs no scan). The request's DataLoader is not
            // primed: it would allocate a promise per record for lookups that the
            // index answers anyway.
            if (query) index.prime(page.items.filter((item): item is R => !isMalformed(item)));
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

/** Records resolved from memory between two checks that the request is still wanted. */
const HELD_RECORDS_PER_CHECK = 64;
