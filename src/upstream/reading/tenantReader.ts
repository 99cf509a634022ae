/**
 * One company's reads for one request (`TenantReader`): the one door through which the
 * GraphQL side (and anything else that answers for a request) reads the upstream's
 * lists. It owns, for that company and request, the pages read (pageCache.ts: fetched
 * once however many fields need them, under the request's call budget and deadline),
 * lookups by id and scans (the tenant's entity index, entityIndex.ts: the upstream
 * has no detail endpoint), the check of the company's grant, and the guard on every
 * walk along a page chain (pageChain.ts). The pattern of `@apollo/datasource-rest`:
 * one source per request that caches and de-duplicates its reads.
 */
import type { ListPage, WfsClient } from '../client';
import type { PageRef } from '../pageReference';
import { isMalformed, type AnyResource, type Resource, type UpstreamRecord } from '../resources';
import { NO_OBSERVER, type Observer } from '../observer';
import type { EntityIndex, EntityIndexes } from './entityIndex';
import { createRequestPages, type RequestPages, type UpstreamQuery } from './pageCache';
import { guardPageChain } from './pageChain';

export type { UpstreamQuery } from './pageCache';

/**
 * One walk along a list's page chain, page after page from one start: a chain that
 * loops back or never ends is an UPSTREAM_BAD_RESPONSE (pageChain.ts).
 */
export type PageWalk<R> = (ref: PageRef | null, pageSize: number) => Promise<ListPage<R>>;

/** One company's reads, for one request. */
export interface TenantReader {
  readonly tenantId: string;
  /**
   * A walk over the list as the upstream has it now, filtered upstream by `query` if
   * given; the tenant's index learns the records read (a later lookup then needs no
   * scan).
   */
  walk<R extends UpstreamRecord>(resource: Resource<R, any>, query?: UpstreamQuery): PageWalk<R>;
  /**
   * A walk over the whole list for a scan in memory (a filter the upstream cannot
   * apply): pages the tenant's index holds answer without a call, each still counted
   * against the call budget. Checks the grant first.
   */
  scan<R extends UpstreamRecord>(resource: Resource<R, any>): PageWalk<R>;
  /** Records for `ids`, in order (null: the list has none): the grant checked, then the tenant's index, which reads only as many pages as the missing ids need. */
  lookup<R extends UpstreamRecord>(resource: Resource<R, any>, ids: readonly string[]): Promise<Array<R | null>>;
  /** The record the tenant's index holds for `id` now, once the grant was checked in this request: no call, no promise. */
  peek<R extends UpstreamRecord>(resource: Resource<R, any>, id: string): R | undefined;
  /**
   * Resolves once the company's current grant allows the resource (undefined: known
   * already, or the resource needs no scope). Data served from memory is checked as a
   * call would be: a withdrawn scope stops it at once, not when the index expires.
   */
  authorize(resource: AnyResource): Promise<void> | undefined;
  /** The request's response is out: forget its pages, indexes and checks. */
  release(): void;
}

/** Process-wide services a company's reads go through. */
export interface ReadingServices {
  readonly client: WfsClient;
  /** The entity indexes of all tenants (one per tenant and list). */
  readonly indexes: EntityIndexes;
  /** Where reads report tenants and cache lookups. Default: nowhere. */
  readonly observer?: Observer;
}

export function createTenantReader(services: ReadingServices, tenantId: string, signal: AbortSignal): TenantReader {
  const observer = services.observer ?? NO_OBSERVER;
  let heldRecordsRead = 0;

  // Once per request and list: the tenant's index, again from the set if it was
  // released meanwhile (evicted or swept), so a request never fills a dropped one.
  // Made on first use, as the maps below: most requests read one list and authorize none.
  let indexes: Map<string, EntityIndex<UpstreamRecord>> | undefined;
  const indexOf = <R extends UpstreamRecord>(resource: Resource<R, any>): EntityIndex<R> => {
    let index = indexes?.get(resource.name);
    if (!index || index.isReleased) {
      index = services.indexes.for<UpstreamRecord>(tenantId, resource.name);
      (indexes ??= new Map()).set(resource.name, index);
    }
    return index as EntityIndex<R>;
  };

  // Within one request the same page is fetched once, however many fields need it.
  // (its call budget and deadline too: made at the first read, not when the request begins).
  let requestPages: RequestPages | undefined;
  const pages = (): RequestPages => (requestPages ??= createRequestPages({ client: services.client, tenantId, signal, observer, indexOf }));

  // Once per request and list; lists without a scope skip it.
  let authorizations: Map<string, Promise<void>> | undefined;
  let authorized: Set<string> | undefined;
  const authorize = (resource: AnyResource): Promise<void> | undefined => {
    if (!resource.scope || authorized?.has(resource.name)) return undefined;
    let pending = authorizations?.get(resource.name);
    if (!pending) {
      const pendings = (authorizations ??= new Map());
      pending = services.client.authorize(tenantId, resource).then(() => void (authorized ??= new Set()).add(resource.name));
      pendings.set(resource.name, pending);
      pending.catch(() => pendings.delete(resource.name));
    }
    return pending;
  };

  return {
    tenantId,
    walk<R extends UpstreamRecord>(resource: Resource<R, any>, query?: UpstreamQuery): PageWalk<R> {
      const index = indexOf(resource);
      return guardPageChain(async (ref, pageSize) => {
        const page = await pages().fresh(resource as Resource<R>, ref, pageSize, query);
        // The request's DataLoader is not primed: it would allocate a promise per
        // record for lookups that the index answers anyway.
        if (query) index.prime(page.items.filter((item): item is R => !isMalformed(item)));
        else index.keepPage(page, pageSize);
        return page;
      });
    },
    scan<R extends UpstreamRecord>(resource: Resource<R, any>): PageWalk<R> {
      const index = indexOf(resource);
      return guardPageChain(async (ref, pageSize) => {
        const pending = authorize(resource as AnyResource);
        if (pending) await pending;
        const page = await pages().held(resource as Resource<R>, ref, pageSize);
        index.keepPage(page, pageSize);
        return page;
      });
    },
    async lookup<R extends UpstreamRecord>(resource: Resource<R, any>, ids: readonly string[]): Promise<Array<R | null>> {
      await authorize(resource as AnyResource);
      return indexOf(resource).lookup(ids, (ref, pageSize) => pages().held(resource as Resource<R>, ref, pageSize));
    },
    peek<R extends UpstreamRecord>(resource: Resource<R, any>, id: string): R | undefined {
      // Resolving many entities from memory is a loop too: checked every so often.
      if (++heldRecordsRead % HELD_RECORDS_PER_CHECK === 0) pages().stillWanted();
      // Not yet authorized in this request: the lookup checks, then answers.
      if (resource.scope && !authorized?.has(resource.name)) return undefined;
      const record = indexOf(resource).peek(id);
      if (record) observer.cacheLookup('entity_index', 1, 0);
      return record;
    },
    authorize,
    release() {
      requestPages?.release();
      indexes?.clear();
      authorizations?.clear();
      authorized?.clear();
    },
  };
}

/** Records resolved from memory between two checks that the request is still wanted. */
const HELD_RECORDS_PER_CHECK = 64;
