import type { IncomingHttpHeaders } from 'node:http';
import DataLoader from 'dataloader';
import type { GraphQLError } from 'graphql';
import type { ListPage, WfsClient } from '../../upstream/client';
import { filterKey, pageKey } from '../../upstream/pageKey';
import type { PageRef } from '../../upstream/pageReference';
import { isMalformed, type AnyResource, type ListFilter, type Resource, type ResourceSet, type UpstreamRecord } from '../../upstream/resources';
import { checkConnectionArgs, FILTER_SCAN_PAGES, resolveConnection, type ConnectionArgs, type ConnectionPage } from './connections';
import type { CursorCodec } from './cursor';
import type { EntityIndex, EntityIndexes } from './entityIndex';
import { NO_OBSERVER, type Observer, type RequestRecord } from '../../observability/events';
import { graphQLError } from '../errors';
import type { IdentityResolver } from '../server/identity';
import { UpstreamError } from '../../upstream/errors';
import { isTimeoutReason } from '../../upstream/failureCause';

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
  /** Aborts when the request is over: its client went away, or its deadline passed. */
  readonly signal: AbortSignal;
  /** What is recorded of this request for its logs and metrics (absent when a test builds a context alone). */
  readonly request?: RequestRecord;
}

/** Process-wide services the per-request context is built from. */
export interface ContextServices {
  readonly client: WfsClient;
  readonly cursors: CursorCodec;
  readonly indexes: EntityIndexes;
  readonly identify: IdentityResolver;
  /** The resources served: the registry's. */
  readonly resources: ResourceSet;
  /** Where the data layer reports tenants and cache lookups. Default: nowhere. */
  readonly observer?: Observer;
}

/**
 * The tenant is worked out lazily, on first use: the router's `_service` query and
 * introspection carry no tenant and must still be answered.
 */
export function createContext(services: ContextServices, headers: IncomingHttpHeaders, signal: AbortSignal, request?: RequestRecord): GraphQLContext {
  const itemErrors: GraphQLError[] = [];
  let tenant: Promise<TenantData> | undefined;
  let known: TenantData | undefined;
  return {
    itemErrors,
    signal,
    ...(request && { request }),
    tenant() {
      tenant ??= services.identify(headers).then((tenantId) => {
        (services.observer ?? NO_OBSERVER).tenantIdentified(tenantId);
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
  const budget = services.client.budgetFor(signal); // one call budget and deadline per request
  const call = { signal, budget };
  const observer = services.observer ?? NO_OBSERVER;
  let heldPagesRead = 0;
  let heldRecordsRead = 0;

  /** Throws once the request is over: nothing it works out in memory would reach anyone. */
  const stillWanted = (): void => {
    if (signal.aborted || budget.remainingMs() === 0) throw requestOver(signal);
  };

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

  /**
   * One page for this request: from the request's own pages, else (`fromIndex`, no
   * upstream query) from the tenant's index, else from the upstream. A page from the
   * index counts against the call budget like a call (once per request, as a shared
   * page does), so in-memory walks are bounded too; and every read checks that the
   * request is still wanted.
   */
  const readPage = <R extends UpstreamRecord>(resource: Resource<R>, ref: PageRef | null, pageSize: number, query: Readonly<Record<string, string>> | undefined, fromIndex: boolean): Promise<ListPage<R>> => {
    try {
      stillWanted();
    } catch (error) {
      return Promise.reject(error as Error);
    }
    const key = pageKey(tenantId, resource.name, ref, pageSize, filterKey(query));
    let page = pages.get(key);
    observer.cacheLookup('request_pages', page ? 1 : 0, page ? 0 : 1);
    if (!page) {
      const held = fromIndex && !query ? indexOf(resource).page(ref, pageSize) : undefined;
      if (held) {
        try {
          budget.take(resource.name);
        } catch (error) {
          return Promise.reject(error as Error);
        }
        heldPagesRead += 1;
        // A long walk through memory lets the event loop turn now and then: other
        // requests go on, and a client that left is noticed (its signal aborts).
        page = heldPagesRead % HELD_PAGES_PER_TURN === 0 ? nextTurn().then(() => held) : Promise.resolve(held);
      } else {
        page = services.client.listPage(tenantId, resource, { ref, pageSize, ...call, ...(query && { query }) });
      }
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
      loader = new DataLoader<string, R | null>(
        async (ids) => {
          try {
            await authorize(resource);
            return await indexOf(resource).lookup(ids, (ref, pageSize) => readPage(resource, ref, pageSize, undefined, true));
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
      // Resolving many entities from memory is a loop too: checked every so often.
      if (++heldRecordsRead % HELD_RECORDS_PER_CHECK === 0) stillWanted();
      // Not yet authorized in this request: the loader checks, then answers.
      if (resource.scope && !authorized.has(resource.name)) return undefined;
      const record = indexOf(resource).peek(id);
      if (record) observer.cacheLookup('entity_index', 1, 0);
      return record;
    },
    loader: <R extends UpstreamRecord>(resource: Resource<R, any> | string) => loaderOf(resourceOf(resource)) as DataLoader<string, R | null>,
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
            const page = await readPage(resource as Resource<R>, ref, pageSize, query, fromIndex);
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

/** Pages read from memory between two turns of the event loop. */
const HELD_PAGES_PER_TURN = 32;
/** Records resolved from memory between two checks that the request is still wanted. */
const HELD_RECORDS_PER_CHECK = 64;

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** The error of work stopped because its request is over: the client left, or the deadline passed. */
function requestOver(signal: AbortSignal): UpstreamError {
  if (signal.aborted && !isTimeoutReason(signal.reason)) {
    return new UpstreamError('UPSTREAM_UNAVAILABLE', 'the client went away: the rest of this request was not worked out');
  }
  return new UpstreamError('UPSTREAM_UNAVAILABLE', "the request's deadline passed before its answer was complete: the rest of it was not worked out; ask for less, or retry", { cause: 'timeout' });
}
