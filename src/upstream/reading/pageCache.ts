/**
 * The per-request page cache: every page of an upstream list that one GraphQL request
 * reads goes through `RequestPages`, so within the request the same page is fetched
 * once however many fields need it, comes from the tenant's entity index when it may,
 * counts against the request's call budget, and is not worked out at all once the
 * request is over (client gone, deadline passed). Within the freshness window a page
 * the company read before is served again from its index (keptPages.ts), once the
 * company's grant allows the list, as a held page is.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { ListPage, WfsClient } from '../client';
import { UpstreamError } from '../errors';
import { isTimeoutReason } from '../failureCause';
import { filterKey, pageKey } from '../pageKey';
import type { PageRef } from '../pageReference';
import type { Resource, UpstreamRecord } from '../resources';
import type { Observer } from '../observer';
import type { CallBudget } from '../resilience/callBudget';
import type { EntityIndex } from './entityIndex';
import { fetchedAt, keptKey, markFetched, type Freshness } from './keptPages';

/** An upstream filter, as query parameters of the list call. */
export type UpstreamQuery = Readonly<Record<string, string>>;

/** The pages one request reads, for one tenant. */
export interface RequestPages {
  /**
   * One page as the upstream has it, at most the freshness window behind (filtered
   * upstream by `query`): from the request's own pages, else a page the company read
   * within the window (`keep`), else from the upstream.
   */
  fresh<R extends UpstreamRecord>(resource: Resource<R>, ref: PageRef | null, pageSize: number, query?: UpstreamQuery): Promise<ListPage<R>>;
  /** One page of the whole list: from the request's own pages, else from the tenant's index, else from the upstream. */
  held<R extends UpstreamRecord>(resource: Resource<R>, ref: PageRef | null, pageSize: number): Promise<ListPage<R>>;
  /** Throws once the request is over: nothing it works out in memory would reach anyone. */
  stillWanted(): void;
  /** Forgets the pages read (the request's response is out). */
  release(): void;
}

export interface RequestPagesOptions {
  readonly client: WfsClient;
  readonly tenantId: string;
  readonly signal: AbortSignal;
  readonly observer: Observer;
  /** The tenant's entity index of a list, for this request. */
  readonly indexOf: <R extends UpstreamRecord>(resource: Resource<R>) => EntityIndex<R>;
  /** Serve pages the company read within the window again (WFS_FRESHNESS_SECONDS > 0, and not a live poll, which must see the upstream). */
  readonly keep: boolean;
  /** The window, in ms (0: nothing is kept). */
  readonly windowMs: number;
  /** The indexes' clock. */
  readonly now: () => number;
  /** What the request used, for its answer's cache policy. */
  readonly freshness: Freshness;
  /** Resolves once the company's grant allows the list (the reader's `authorize`). */
  readonly authorize: (resource: Resource) => Promise<void> | undefined;
  /** Told of each page read from the upstream while pages are kept (`keep`), with its `keptKey`: what a watching choice weighs (live/watch.ts). */
  readonly missed?: (list: string, key: string) => void;
}

export function createRequestPages(options: RequestPagesOptions): RequestPages {
  return new PageCache(options);
}

/** A class, not closures: one per request that reads (see `RequestReader` in tenantReader.ts). */
class PageCache implements RequestPages {
  private readonly pages = new Map<string, Promise<ListPage<unknown>>>();
  /** One call budget and deadline per request. */
  private readonly budget: CallBudget;
  private heldPagesRead = 0;

  constructor(private readonly options: RequestPagesOptions) {
    this.budget = options.client.budgetFor(options.signal);
  }

  fresh<R extends UpstreamRecord>(resource: Resource<R>, ref: PageRef | null, pageSize: number, query?: UpstreamQuery): Promise<ListPage<R>> {
    return this.read(resource, ref, pageSize, query, false);
  }

  held<R extends UpstreamRecord>(resource: Resource<R>, ref: PageRef | null, pageSize: number): Promise<ListPage<R>> {
    return this.read(resource, ref, pageSize, undefined, true);
  }

  stillWanted(): void {
    const signal = this.options.signal;
    if (signal.aborted || this.budget.remainingMs() === 0) throw requestOver(signal);
  }

  release(): void {
    this.pages.clear();
  }

  /**
   * A page from the index counts against the call budget like a call (once per
   * request, as a shared page does), so in-memory walks are bounded too; and every
   * read checks that the request is still wanted.
   */
  private read<R extends UpstreamRecord>(resource: Resource<R>, ref: PageRef | null, pageSize: number, query: UpstreamQuery | undefined, fromIndex: boolean): Promise<ListPage<R>> {
    try {
      this.stillWanted();
    } catch (error) {
      return Promise.reject(error as Error);
    }
    const { client, tenantId, signal, observer, indexOf, freshness } = this.options;
    const pages = this.pages;
    const filter = filterKey(query);
    const key = pageKey(tenantId, resource.name, ref, pageSize, filter);
    let page = pages.get(key);
    observer.cacheLookup('request_pages', page ? 1 : 0, page ? 0 : 1);
    if (!page) {
      const index = fromIndex || this.options.keep ? indexOf(resource) : undefined;
      const kept = this.options.keep && !fromIndex ? keptKey(ref, pageSize, filter) : undefined;
      const held = fromIndex ? index!.page(ref, pageSize) : kept !== undefined ? index!.keptPage(kept) : undefined;
      if (!fromIndex && this.options.keep) observer.cacheLookup('kept_pages', held ? 1 : 0, held ? 0 : 1);
      if (held) {
        freshness.use(resource.name, index!.freshUntil);
        try {
          this.budget.take(resource.name);
        } catch (error) {
          return Promise.reject(error as Error);
        }
        this.heldPagesRead += 1;
        // A long walk through memory lets the event loop turn now and then: other
        // requests go on, and a client that left is noticed (its signal aborts).
        page = this.heldPagesRead % HELD_PAGES_PER_TURN === 0 ? nextTurn().then(() => held) : Promise.resolve(held);
        // A kept page is served as a held one is: only once the grant allows the list.
        const pending = fromIndex ? undefined : this.options.authorize(resource);
        if (pending) {
          const served = page;
          page = pending.then(() => served);
        }
      } else {
        const since = this.options.now();
        freshness.use(resource.name, since + this.options.windowMs);
        if (kept !== undefined) this.options.missed?.(resource.name, kept);
        page = client.listPage(tenantId, resource, { ref, pageSize, signal, budget: this.budget, ...(query && { query }) }).then((fetched) => {
          markFetched(fetched, since);
          // Dated by the call's earliest caller (a call this request joined may be older than the request).
          freshness.asked(resource.name, fetchedAt(fetched) ?? since);
          return fetched;
        });
      }
      // A page that failed stays failed for the rest of the request: the request sees one
      // view of the upstream, and nothing that reads again within it (another field, or
      // graphql-js answering after a compiled answer with errors was set aside,
      // execution.ts) calls the upstream a second time for it. The client has already
      // retried what was worth retrying.
      pages.set(key, page);
      page.catch(() => undefined);
    }
    return page as Promise<ListPage<R>>;
  }
}

const HELD_PAGES_PER_TURN = 32;

/** The error of work stopped because its request is over: the client left, or the deadline passed. */
function requestOver(signal: AbortSignal): UpstreamError {
  if (signal.aborted && !isTimeoutReason(signal.reason)) {
    return new UpstreamError('UPSTREAM_UNAVAILABLE', 'the client went away: the rest of this request was not worked out');
  }
  return new UpstreamError('UPSTREAM_UNAVAILABLE', "the request's deadline passed before its answer was complete: the rest of it was not worked out; ask for less, or retry", { cause: 'timeout' });
}
