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
import type { EntityIndex } from './entityIndex';
import type { EntityIndexes } from './entityIndexes';
import { createRequestPages, type RequestPages, type UpstreamQuery } from './pageCache';
import { guardPageChain } from './pageChain';
import { fetchedAt, Freshness, keptKey } from './keptPages';
import { stillCurrent, type AnswerSources } from './epochs';
import { filterKey } from '../pageKey';

export type { UpstreamQuery } from './pageCache';
/** When a page a walk returned was asked of the upstream (a live poll dates what it confirms by it, docs/caching.md). */
export { fetchedAt } from './keptPages';
export type { AnswerSources } from './epochs';
/** Whether an answer made of these sources is still what its indexes hold (an answer kept whole, cache/answers.ts). */
export { stillCurrent as answerStillCurrent } from './epochs';

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
  walk<R extends UpstreamRecord>(resource: Resource<R>, query?: UpstreamQuery): PageWalk<R>;
  /**
   * A walk over the whole list for a scan in memory (a filter the upstream cannot
   * apply): pages the tenant's index holds answer without a call, each still counted
   * against the call budget. Checks the grant first.
   */
  scan<R extends UpstreamRecord>(resource: Resource<R>): PageWalk<R>;
  /** Records for `ids`, in order (null: the list has none): the grant checked, then the tenant's index, which reads only as many pages as the missing ids need. */
  lookup<R extends UpstreamRecord>(resource: Resource<R>, ids: readonly string[]): Promise<Array<R | null>>;
  /** The record the tenant's index holds for `id` now, once the grant was checked in this request: no call, no promise. */
  peek<R extends UpstreamRecord>(resource: Resource<R>, id: string): R | undefined;
  /**
   * Resolves once the company's current grant allows the resource (undefined: known
   * already, or the resource needs no scope). Data served from memory is checked as a
   * call would be: a withdrawn scope stops it at once, not when the index expires.
   */
  authorize(resource: AnyResource): Promise<void> | undefined;
  /** What the request's reads used so far: the oldest data behind its answer, and the lists (its cache policy, docs/caching.md). */
  readonly freshness: Freshness;
  /**
   * Whether an answer made of `sources` (another request's `freshness.answerSources()`)
   * may be served again to this company now: every index it read from still holds what
   * it held then, and the company's current grant allows every list it read.
   */
  stillServes(sources: AnswerSources): Promise<boolean>;
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
  /** WFS_FRESHNESS_SECONDS in ms: how far behind the upstream an answer may be; 0 or absent: pages are never served again from memory. */
  readonly freshnessMs?: number;
}

/** `live`: a live poll's reads, which always ask the upstream (a kept page would hide the change the poll is for). */
export function createTenantReader(services: ReadingServices, tenantId: string, signal: AbortSignal, options: { readonly live?: boolean } = {}): TenantReader {
  return new RequestReader(services, tenantId, signal, options.live === true);
}

/**
 * A class, not an object of closures: one is made for every request that names a
 * company, and what it holds lives through the upstream wait (bench/retained.cjs);
 * methods on the prototype cost no closure per request. What most requests never
 * use (the index map, the authorizations, the page cache with its call budget) is
 * made on first use.
 */
class RequestReader implements TenantReader {
  private readonly observer: Observer;
  private heldRecordsRead = 0;
  /**
   * Once per request and list: the tenant's index, again from the set if it was
   * released meanwhile (evicted or swept), so a request never fills a dropped one.
   */
  private indexes: Map<string, EntityIndex<UpstreamRecord>> | undefined;
  /** Within one request the same page is fetched once, however many fields need it (its call budget and deadline start at the first read). */
  private requestPages: RequestPages | undefined;
  /** Once per request and list; lists without a scope skip it. */
  private authorizations: Map<string, Promise<void>> | undefined;
  private authorized: Set<string> | undefined;
  /** Made on first read: a request that reads nothing (introspection) needs none. */
  private used: Freshness | undefined;

  constructor(
    private readonly services: ReadingServices,
    readonly tenantId: string,
    private readonly signal: AbortSignal,
    private readonly live: boolean,
  ) {
    this.observer = services.observer ?? NO_OBSERVER;
  }

  get freshness(): Freshness {
    return (this.used ??= new Freshness());
  }

  walk<R extends UpstreamRecord>(resource: Resource<R>, query?: UpstreamQuery): PageWalk<R> {
    const index = this.indexOf(resource);
    return guardPageChain(async (ref, pageSize) => {
      const page = await this.pages().fresh(resource as Resource<R>, ref, pageSize, query);
      // A page from memory (a kept page: most reads within a window) was learnt and kept
      // when it came from the upstream, and a kept page's records are only ever dropped
      // with it: learning it again would find every record held, on every request.
      if (fetchedAt(page) === undefined) return page;
      // The request's DataLoader is not primed: it would allocate a promise per
      // record for lookups that the index answers anyway.
      if (query) index.prime(page.items.filter((item): item is R => !isMalformed(item)), fetchedAt(page));
      else index.keepPage(page, pageSize);
      // Learnt first, then kept: a change the page shows has dropped what was held.
      if (this.keeps()) index.keep(keptKey(ref, pageSize, filterKey(query)), page, filterKey(query));
      return page;
    });
  }

  scan<R extends UpstreamRecord>(resource: Resource<R>): PageWalk<R> {
    const index = this.indexOf(resource);
    return guardPageChain(async (ref, pageSize) => {
      const pending = this.authorize(resource as AnyResource);
      if (pending) await pending;
      const page = await this.pages().held(resource as Resource<R>, ref, pageSize);
      index.keepPage(page, pageSize);
      return page;
    });
  }

  async lookup<R extends UpstreamRecord>(resource: Resource<R>, ids: readonly string[]): Promise<Array<R | null>> {
    await this.authorize(resource as AnyResource);
    const index = this.indexOf(resource);
    // What the index holds now is as old as its lifetime; pages a scan reads note their own age.
    this.freshness.use(resource.name, index.freshUntil);
    return index.lookup(ids, (ref, pageSize) => this.pages().held(resource as Resource<R>, ref, pageSize));
  }

  peek<R extends UpstreamRecord>(resource: Resource<R>, id: string): R | undefined {
    // Resolving many entities from memory is a loop too: checked every so often.
    if (++this.heldRecordsRead % HELD_RECORDS_PER_CHECK === 0) this.pages().stillWanted();
    // Not yet authorized in this request: the lookup checks, then answers.
    if (resource.scope && !this.authorized?.has(resource.name)) return undefined;
    const index = this.indexOf(resource);
    const record = index.peek(id);
    if (record) {
      this.observer.cacheLookup('entity_index', 1, 0);
      this.freshness.use(resource.name, index.freshUntil);
    }
    return record;
  }

  async stillServes(sources: AnswerSources): Promise<boolean> {
    if (!stillCurrent(sources)) return false;
    for (const { resource } of sources) {
      const pending = this.authorize(resource);
      if (pending && !(await pending.then(() => true, () => false))) return false;
    }
    // The grant may have taken a turn: checked again after it.
    return stillCurrent(sources);
  }

  authorize(resource: AnyResource): Promise<void> | undefined {
    if (!resource.scope || this.authorized?.has(resource.name)) return undefined;
    let pending = this.authorizations?.get(resource.name);
    if (!pending) {
      const pendings = (this.authorizations ??= new Map());
      pending = this.services.client.authorize(this.tenantId, resource).then(() => void (this.authorized ??= new Set()).add(resource.name));
      // A refusal stays for the request, as a failed page does (pageCache.ts).
      pendings.set(resource.name, pending);
      pending.catch(() => undefined);
    }
    return pending;
  }

  release(): void {
    this.requestPages?.release();
    this.indexes?.clear();
    this.authorizations?.clear();
    this.authorized?.clear();
  }

  private indexOf<R extends UpstreamRecord>(resource: Resource<R>): EntityIndex<R> {
    let index = this.indexes?.get(resource.name);
    if (!index || index.isReleased) {
      index = this.services.indexes.for<UpstreamRecord>(this.tenantId, resource.name);
      (this.indexes ??= new Map()).set(resource.name, index);
      // Before anything of the list is read: an answer kept whole checks this index's epoch.
      if (this.keeps()) this.freshness.from(resource as AnyResource, index);
    }
    return index as EntityIndex<R>;
  }

  private keeps(): boolean {
    return !this.live && (this.services.freshnessMs ?? 0) > 0;
  }

  private pages(): RequestPages {
    return (this.requestPages ??= createRequestPages({
      client: this.services.client,
      tenantId: this.tenantId,
      signal: this.signal,
      observer: this.observer,
      indexOf: (resource) => this.indexOf(resource),
      keep: this.keeps(),
      windowMs: this.services.freshnessMs ?? 0,
      now: this.services.indexes.now,
      freshness: this.freshness,
      authorize: (resource) => this.authorize(resource as AnyResource),
      missed: (list, key) => this.services.indexes.noteRead(this.tenantId, list, 'miss', key),
    }));
  }
}

/** Records resolved from memory between two checks that the request is still wanted. */
const HELD_RECORDS_PER_CHECK = 64;
