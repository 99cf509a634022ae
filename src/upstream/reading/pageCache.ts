/**
 * The per-request page cache: every page of an upstream list that one GraphQL request
 * reads goes through `RequestPages`, so within the request the same page is fetched
 * once however many fields need it, comes from the tenant's entity index when it may,
 * counts against the request's call budget, and is not worked out at all once the
 * request is over (client gone, deadline passed).
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { ListPage, WfsClient } from '../client';
import { UpstreamError } from '../errors';
import { isTimeoutReason } from '../failureCause';
import { filterKey, pageKey } from '../pageKey';
import type { PageRef } from '../pageReference';
import type { Resource, UpstreamRecord } from '../resources';
import type { Observer } from '../observer';
import type { EntityIndex } from './entityIndex';

/** An upstream filter, as query parameters of the list call. */
export type UpstreamQuery = Readonly<Record<string, string>>;

/** The pages one request reads, for one tenant. */
export interface RequestPages {
  /** One page as the upstream has it now (filtered upstream by `query`): from the request's own pages, else from the upstream. */
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
  readonly indexOf: <R extends UpstreamRecord>(resource: Resource<R, any>) => EntityIndex<R>;
}

export function createRequestPages({ client, tenantId, signal, observer, indexOf }: RequestPagesOptions): RequestPages {
  const pages = new Map<string, Promise<ListPage<unknown>>>();
  const budget = client.budgetFor(signal); // one call budget and deadline per request
  const call = { signal, budget };
  let heldPagesRead = 0;

  const stillWanted = (): void => {
    if (signal.aborted || budget.remainingMs() === 0) throw requestOver(signal);
  };

  /**
   * A page from the index counts against the call budget like a call (once per
   * request, as a shared page does), so in-memory walks are bounded too; and every
   * read checks that the request is still wanted.
   */
  const read = <R extends UpstreamRecord>(resource: Resource<R>, ref: PageRef | null, pageSize: number, query: UpstreamQuery | undefined, fromIndex: boolean): Promise<ListPage<R>> => {
    try {
      stillWanted();
    } catch (error) {
      return Promise.reject(error as Error);
    }
    const key = pageKey(tenantId, resource.name, ref, pageSize, filterKey(query));
    let page = pages.get(key);
    observer.cacheLookup('request_pages', page ? 1 : 0, page ? 0 : 1);
    if (!page) {
      const held = fromIndex ? indexOf(resource).page(ref, pageSize) : undefined;
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
        page = client.listPage(tenantId, resource, { ref, pageSize, ...call, ...(query && { query }) });
      }
      pages.set(key, page);
      page.catch(() => pages.delete(key));
    }
    return page as Promise<ListPage<R>>;
  };

  return {
    fresh: (resource, ref, pageSize, query) => read(resource, ref, pageSize, query, false),
    held: (resource, ref, pageSize) => read(resource, ref, pageSize, undefined, true),
    stillWanted,
    release: () => pages.clear(),
  };
}

/** Pages read from memory between two turns of the event loop. */
const HELD_PAGES_PER_TURN = 32;

/** The error of work stopped because its request is over: the client left, or the deadline passed. */
function requestOver(signal: AbortSignal): UpstreamError {
  if (signal.aborted && !isTimeoutReason(signal.reason)) {
    return new UpstreamError('UPSTREAM_UNAVAILABLE', 'the client went away: the rest of this request was not worked out');
  }
  return new UpstreamError('UPSTREAM_UNAVAILABLE', "the request's deadline passed before its answer was complete: the rest of it was not worked out; ask for less, or retry", { cause: 'timeout' });
}
