/**
 * Answers that may be kept (docs/caching.md): what the reading side needs to serve a
 * page again from memory within the freshness window (`WFS_FRESHNESS_SECONDS`), and to
 * say how fresh a request's answer is.
 *
 * The kept pages themselves live in the company's entity index of the list
 * (entityIndex.ts, `keptPage`/`keep`, held in pages.ts), not in a store of their own:
 * a kept page, the records `location(id:)`, `node`, `Shift.location` and `_entities`
 * answer from, and the pages a filtered scan reads then share one lifetime, one memory
 * budget (memory/budget.ts, least recently used company first) and one drop when a
 * change is seen, so a record cannot read differently one way than another.
 *
 * This module holds the pieces around them: when a page was asked of the upstream
 * (`markFetched`, `fetchedAt`), the key of a kept page (`keptKey`), and what one request
 * used (`Freshness`: the oldest data behind its answer, and the lists it read, with the
 * epochs of the indexes it read them through: epochs.ts).
 */
import type { PageRef } from '../pageReference';
import type { AnyResource } from '../resources';
import { stillCurrent, type AnswerSource, type AnswerSources, type IndexEpoch } from './epochs';

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
 * What one request's answer was made of, for the cache's decision (cache/policy.ts):
 * until when the oldest data it used is within
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
  /** Per list, the company's index the request first reached it through, and that index's epoch then. */
  private sources: Map<string, AnswerSource> | undefined;
  /** Per list, when the earliest page the request read of it from the upstream was asked for. */
  private earliest: Map<string, number> | undefined;

  use(list: string, until: number): void {
    this.lists.add(list);
    if (until < this.until) this.until = until;
  }

  /** A page of `list` the request read came from the upstream, asked for at `at` (its earliest caller's start, `fetchedAt`). */
  asked(list: string, at: number): void {
    const earliest = (this.earliest ??= new Map());
    if (!(at >= (earliest.get(list) ?? Infinity))) earliest.set(list, at);
  }

  /**
   * The request reaches `resource`'s list through `index`: noted the first time, before
   * anything of the list is read (a page asked for then, or a record the index holds).
   */
  from(resource: AnyResource, index: IndexEpoch): void {
    const sources = (this.sources ??= new Map());
    if (!sources.has(resource.name)) sources.set(resource.name, { resource, index, epoch: index.epoch });
  }

  /**
   * What the answer was made of, if it may be kept whole: every list it used was reached
   * through an index that has forgotten nothing since (`stillCurrent`), and every page it
   * read of it from the upstream was asked for within the index's current lifetime, as
   * the index requires of a page it learns. Undefined when an index has forgotten (a
   * change seen during the request: part of the answer may be older than what another
   * request has shown since), when a page is older than the lifetime (one that joined a
   * call started before a change was seen, which the index refused to learn and nothing
   * else would serve again), or when a list was read some other way.
   */
  answerSources(): AnswerSources | undefined {
    if (this.lists.size === 0 || !this.sources) return undefined;
    const sources: AnswerSource[] = [];
    for (const list of this.lists) {
      const source = this.sources.get(list);
      if (!source || source.index.lifetimeStart > (this.earliest?.get(list) ?? Infinity)) return undefined;
      sources.push(source);
    }
    return stillCurrent(sources) ? sources : undefined;
  }
}
