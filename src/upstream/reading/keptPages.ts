/**
 * Answers that may be kept (docs/caching.md): what the reading side needs to serve a
 * page again from memory within the freshness window (`WFS_FRESHNESS_SECONDS`), and to
 * say how fresh a request's answer is.
 *
 * The kept pages themselves live in the company's entity index of the list
 * (entityIndex.ts, `keptPage`/`keep`), not in a store of their own: a kept page, the
 * records `location(id:)`, `node`, `Shift.location` and `_entities` answer from, and
 * the pages a filtered scan reads then share one lifetime, one memory budget
 * (`WFS_ENTITY_INDEX_MAX_RECORDS`, least recently used company first) and one drop when
 * a change is seen, so a record cannot read differently one way than another.
 *
 * This module holds the pieces around them: when a page was asked of the upstream
 * (`markFetched`, `fetchedAt`), the key of a kept page (`keptKey`), and what one request
 * used (`Freshness`: the oldest data behind its answer, and the lists it read).
 */
import type { PageRef } from '../pageReference';

/**
 * When each page read from the upstream was asked for (ms, the indexes' clock), by the
 * page object the client answered. Identical calls in flight share one page object (the
 * client's coalescer): the earliest asker is kept, which is the caller that started the
 * call, so a page that joined a call already under way is as old as that call.
 * A page not in here came from memory.
 */
const asked = new WeakMap<object, number>();

/** Notes that `page` came from the upstream, asked for at `at`. */
export function markFetched(page: object, at: number): void {
  const known = asked.get(page);
  if (known === undefined || at < known) asked.set(page, at);
}

/** When `page` was asked of the upstream; undefined: it came from memory. */
export function fetchedAt(page: object): number | undefined {
  return asked.get(page);
}

/** The key of a kept page within its company's index of one list: reference, page size and upstream filter. */
export function keptKey(ref: PageRef | null, pageSize: number, filter: string): string {
  return `${pageSize}\u0000${filter}\u0000${ref ?? ''}`;
}

/**
 * What one request's answer was made of, for its cache policy (the cache-control
 * plugin, observability/cachePolicy.ts): until when the oldest data it used is within
 * the window, and the lists it read. Data read from the upstream during the request is
 * fresh until it was asked for plus the window; data from memory until its index's
 * lifetime ends (every record and page an index holds was asked for after its lifetime
 * began, and the lifetime is at most the window).
 */
export class Freshness {
  /** The earliest moment (ms) at which some data behind the answer is older than the window; Infinity: none read. */
  until = Infinity;
  /** The lists read, by name. */
  readonly lists = new Set<string>();

  use(list: string, until: number): void {
    this.lists.add(list);
    if (until < this.until) this.until = until;
  }
}
