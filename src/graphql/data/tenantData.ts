/**
 * One tenant's data for one GraphQL request (`TenantData`), assembled from the pieces
 * around it: the request's TenantReader (upstream/reading/: its pages, the tenant's
 * entity index, the grant check and the call budget); the entity loaders
 * (loaders.ts); and connection assembly, which turns connection arguments and a scope
 * (filter, parent) into walks of the reader and cursors bound to tenant, list and scope.
 */
import type DataLoader from 'dataloader';
import type { GraphQLError } from 'graphql';
import { filterKey } from '../../upstream/pageKey';
import type { ListFilter, MalformedRecord, Resource, ResourceSet, UpstreamRecord } from '../../upstream/resources';
import { createTenantReader, type ReadingServices, type TenantReader } from '../../upstream/reading/tenantReader';
import { graphQLError } from '../errors';
import { checkConnectionArgs, FILTER_SCAN_PAGES, resolveConnection, type ConnectionArgs, type ConnectionPage, type ConnectionSource } from './connections';
import type { CursorCodec, CursorPosition } from './cursor';
import type { ListPage } from '../../upstream/client';
import type { PageRef } from '../../upstream/pageReference';
import { createEntityLoaders, type RequestLoaders } from './loaders';

/** What narrows a connection: a filter, and the parent record of a child connection (`Location.shifts`). */
export interface ConnectionScope<F extends ListFilter = ListFilter> {
  readonly filter?: F;
  readonly parent?: { readonly typename: string; readonly id: string };
}

/** One tenant's data, for one GraphQL request. */
export interface TenantData {
  readonly tenantId: string;
  /** The request's reads of this tenant's lists (the live poller reads through it too). */
  readonly reader: TenantReader;
  /** The record the tenant's entity index holds for `id` now, if any: no batch, no promise. */
  held<R extends UpstreamRecord>(resource: Resource<R>, id: string): R | undefined;
  /** The per-request entity loader of a resource (by resource, list name or GraphQL type name). */
  loader<R extends UpstreamRecord>(resource: Resource<R> | string): DataLoader<string, R | null>;
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

/** Process-wide services a tenant's data is read through: the reading side's, and the GraphQL side's own. */
export interface DataServices extends ReadingServices {
  readonly cursors: CursorCodec;
  /** The resources served: the registry's. */
  readonly resources: ResourceSet;
}

/** The canonical text a scoped connection's cursors are bound to (`''` for a plain list). */
function scopeKey(scope: ConnectionScope | undefined): string {
  const filter = filterKey(scope?.filter);
  const parent = scope?.parent ? `${scope.parent.typename}:${scope.parent.id}` : '';
  return filter === '' && parent === '' ? '' : `${parent}|${filter}`;
}

/** `itemErrors` receives the errors that do not fail a field (a malformed item skipped in a page). */
export function createTenantData(services: DataServices, tenantId: string, signal: AbortSignal, itemErrors: GraphQLError[]): TenantData {
  return new RequestTenantData(services, tenantId, createTenantReader(services, tenantId, signal), itemErrors);
}

/**
 * Classes, not objects of closures (this one and `ListSource`): one of each is made for
 * every request, and they live through its upstream wait (bench/retained.cjs).
 */
class RequestTenantData implements TenantData {
  /** Made at the first entity lookup: a request that only pages a list needs none. */
  private loaders: RequestLoaders | undefined;

  constructor(
    readonly services: DataServices,
    readonly tenantId: string,
    readonly reader: TenantReader,
    private readonly itemErrors: GraphQLError[],
  ) {}

  held<R extends UpstreamRecord>(resource: Resource<R>, id: string): R | undefined {
    return this.reader.peek(resource, id);
  }

  loader<R extends UpstreamRecord>(resource: Resource<R> | string): DataLoader<string, R | null> {
    return (this.loaders ??= createEntityLoaders({ resources: this.services.resources, reader: this.reader })).loader(resource);
  }

  release(): void {
    this.reader.release();
    this.loaders?.release();
  }

  connection<R extends UpstreamRecord, F extends ListFilter>(resource: Resource<R, F>, args: ConnectionArgs, scope: ConnectionScope<F> = {}): Promise<ConnectionPage<R>> {
    // Not async: the common case hands resolveConnection's promise on as it is (no frame
    // of its own, no promise resolved with a promise, through the upstream wait).
    try {
      const request = checkConnectionArgs(args);
      const boundTo = scopeKey(scope);
      const filter = scope.filter;
      const filtered = filter !== undefined && boundTo !== '';
      if (filtered && !resource.matches) throw new Error(`the resource "${resource.name}" was given a filter but has no matches()`);
      const query = filtered ? resource.upstreamQuery?.(filter) : undefined;
      // A filtered scan the upstream cannot filter reads pages the per-tenant index may already hold.
      const scanned = filtered && !query;
      const source = new ListSource<R, F>(this, resource, boundTo, filtered ? filter : undefined, scanned ? this.reader.scan(resource) : this.reader.walk(resource, query));
      if (!scanned) return resolveConnection<R>(source, request);
      const authorized = this.reader.authorize(resource);
      return authorized ? authorized.then(() => resolveConnection<R>(source, request)) : resolveConnection<R>(source, request);
    } catch (error) {
      return Promise.reject(error as Error);
    }
  }

  /** An item a connection skipped (malformed): an error for that item, the page goes on. */
  skipped(list: string, reason: string): void {
    this.itemErrors.push(graphQLError('UPSTREAM_BAD_RESPONSE', `an item of ${list} was skipped: ${reason}`));
  }
}

/** One connection's view of one list: its walk, and cursors bound to tenant, list and scope. */
class ListSource<R extends UpstreamRecord, F extends ListFilter> implements ConnectionSource<R> {
  readonly filter?: { matches(record: R): boolean; readonly scanBound: number };

  constructor(
    private readonly data: RequestTenantData,
    private readonly resource: Resource<R, F>,
    private readonly boundTo: string,
    filter: F | undefined,
    readonly fetchPage: (ref: PageRef | null, pageSize: number) => Promise<ListPage<R>>,
  ) {
    if (filter !== undefined) this.filter = { matches: (record: R) => resource.matches!(record, filter), scanBound: FILTER_SCAN_PAGES };
  }

  decodeCursor(cursor: string, argument: 'after' | 'before'): CursorPosition {
    return this.data.services.cursors.decode(cursor, this.data.tenantId, this.resource.name, argument, this.boundTo);
  }

  encodeCursor(position: CursorPosition): string {
    return this.data.services.cursors.encode(this.data.tenantId, this.resource.name, position, this.boundTo);
  }

  reportMalformed(item: MalformedRecord): void {
    this.data.skipped(this.resource.name, item.reason);
  }
}
