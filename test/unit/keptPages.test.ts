import { EntityIndexes } from '../../src/upstream/reading/entityIndexes';
import { Freshness, keptKey, markFetched } from '../../src/upstream/reading/keptPages';
import { stillCurrent } from '../../src/upstream/reading/epochs';
import { RESOURCES } from '../../src/upstream/resources';
import type { ListPage } from '../../src/upstream/client';
import { UPSTREAM_PAGE_SIZE } from '../../src/upstream/endpoints';

/**
 * Pages kept to be served again within the freshness window (docs/caching.md): they
 * live in the company's entity index of the list, so they expire, are bounded and are
 * dropped with it. A frozen clock, no waiting.
 */

type Loc = { id: string; name: string };

/** A page as the upstream answered it at `askedAt` (marked as read upstream, as the request's page reader does). */
function upstreamPage(items: Loc[], askedAt: number, pageSize = 10): ListPage<Loc> {
  const page: ListPage<Loc> = { ref: null, pageSize, items, hasMore: false, next: null, previous: null };
  markFetched(page, askedAt);
  return page;
}

const records = (prefix: string, count: number, name = 'n'): Loc[] => Array.from({ length: count }, (_, i) => ({ id: `${prefix}${i}`, name: `${name}${i}` }));
const KEY = keptKey(null, 10, '');

describe('kept pages', () => {
  it('are served until the window ends, then read again', () => {
    let now = 1_000;
    const indexes = new EntityIndexes({ now: () => now, ttlMs: 5_000, sweepEveryMs: 0 });
    const index = indexes.for<Loc>('A', 'locations');
    const page = upstreamPage(records('a', 3), now);
    index.keepPage(page, 10);
    index.keep(KEY, page, '');
    expect(index.keptPage(KEY)?.items).toEqual(page.items);
    expect(index.freshUntil).toBe(6_000);
    now = 5_999;
    expect(index.keptPage(KEY)).toBeDefined();
    now = 6_000;
    expect(index.keptPage(KEY)).toBeUndefined();
    expect(index.peek('a0')).toBeUndefined();
  });

  it('are kept per company: another company never finds one under the same key', () => {
    const indexes = new EntityIndexes({ now: () => 0, ttlMs: 5_000, sweepEveryMs: 0 });
    const page = upstreamPage(records('a', 3), 0);
    indexes.for<Loc>('A', 'locations').keepPage(page, 10);
    indexes.for<Loc>('A', 'locations').keep(KEY, page, '');
    expect(indexes.for<Loc>('B', 'locations').keptPage(KEY)).toBeUndefined();
    expect(indexes.for<Loc>('A', 'shifts').keptPage(KEY)).toBeUndefined();
    expect(indexes.for<Loc>('A', 'locations').keptPage(KEY)).toBeDefined();
  });

  it('count against the memory budget, the least recently used company going first', () => {
    const indexes = new EntityIndexes({ now: () => 0, ttlMs: 5_000, maxRecords: 50, sweepEveryMs: 0 });
    const keep = (tenant: string) => {
      const page = upstreamPage(records(tenant, 10), 0);
      const index = indexes.for<Loc>(tenant, 'locations');
      index.prime(page.items as Loc[], 0);
      index.keep(KEY, page, '');
    };
    keep('A');
    // Ten records in the index, ten more in the kept page, one for the page itself.
    expect(indexes.records).toBe(21);
    keep('B');
    expect(indexes.records).toBe(42);
    keep('C');
    expect(indexes.records).toBeLessThanOrEqual(50);
    expect(indexes.for<Loc>('A', 'locations').keptPage(KEY)).toBeUndefined();
    expect(indexes.for<Loc>('C', 'locations').keptPage(KEY)).toBeDefined();
  });

  it('go when a page read upstream shows a record in another version, and nothing older is learnt after', () => {
    let now = 0;
    const indexes = new EntityIndexes({ now: () => now, ttlMs: 30_000, sweepEveryMs: 0 });
    const index = indexes.for<Loc>('A', 'locations');
    const first = upstreamPage(records('a', 3), 0);
    index.keepPage(first, 10);
    index.keep(KEY, first, '');
    now = 1_000;
    // Asked for before the change was seen, answered after it: must not bring the old name back.
    const late = upstreamPage(records('a', 3), 1_500);
    const changed = upstreamPage(records('a', 3, 'renamed'), 2_000);
    const other = keptKey(null, 20, '');
    index.prime(changed.items as Loc[], 2_000);
    expect(index.keptPage(KEY)).toBeUndefined();
    expect(index.peek('a0')?.name).toBe('renamed0');
    // The lifetime starts again when the page that showed the change was asked for.
    expect(index.freshUntil).toBe(32_000);
    index.keepPage(late, 10);
    index.keep(other, late, '');
    expect(index.keptPage(other)).toBeUndefined();
    expect(index.peek('a0')?.name).toBe('renamed0');
  });

  it('go when the same page read upstream has other ids, or when a poll says the list changed', () => {
    const indexes = new EntityIndexes({ now: () => 0, ttlMs: 30_000, sweepEveryMs: 0 });
    const index = indexes.for<Loc>('A', 'locations');
    const full = upstreamPage(records('a', 3), 0, UPSTREAM_PAGE_SIZE);
    index.keepPage(full, UPSTREAM_PAGE_SIZE);
    index.keep(keptKey(null, UPSTREAM_PAGE_SIZE, ''), full, '');
    // a1 was removed upstream: the same page now has two records.
    index.keepPage(upstreamPage([full.items[0] as Loc, full.items[2] as Loc], 0, UPSTREAM_PAGE_SIZE), UPSTREAM_PAGE_SIZE);
    expect(index.peek('a1')).toBeUndefined();
    expect(index.keptPage(keptKey(null, UPSTREAM_PAGE_SIZE, ''))).toBeUndefined();

    const again = upstreamPage(records('b', 2), 0);
    indexes.for<Loc>('A', 'shifts').keepPage(again, 10);
    indexes.for<Loc>('A', 'shifts').keep(KEY, again, '');
    indexes.changed('A', 'shifts');
    expect(indexes.for<Loc>('A', 'shifts').keptPage(KEY)).toBeUndefined();
    expect(indexes.for<Loc>('A', 'shifts').peek('b0')).toBeUndefined();
  });

  it('keep nothing that did not come from the upstream (a page served from memory is not kept again)', () => {
    const indexes = new EntityIndexes({ now: () => 0, ttlMs: 30_000, sweepEveryMs: 0 });
    const index = indexes.for<Loc>('A', 'locations');
    const fromMemory: ListPage<Loc> = { ref: null, pageSize: 10, items: records('a', 2), hasMore: false, next: null, previous: null };
    index.keep(KEY, fromMemory, '');
    expect(index.keptPage(KEY)).toBeUndefined();
  });
});

/**
 * Watched lists (docs/caching.md): a poll's walk of the whole list confirms what an
 * index holds when every record and page held is what the walk saw, so it is served
 * for another window from the walk's first ask, never more than a window ahead.
 */
describe('kept pages confirmed by a walk', () => {
  /** The list as chained pages of `size`, each asked for at `askedAt` and kept as a query's walk keeps them. */
  function keepChain(index: ReturnType<EntityIndexes['for']>, list: Loc[], size: number, askedAt: number): void {
    for (let start = 0, ref: string | null = null; start < list.length; start += size) {
      const next = start + size < list.length ? `r${start + size}` : null;
      const page: ListPage<Loc> = { ref, pageSize: size, items: list.slice(start, start + size), hasMore: next !== null, next, previous: null };
      markFetched(page, askedAt);
      index.keepPage(page, size);
      index.keep(keptKey(ref, size, ''), page, '');
      ref = next;
    }
  }

  it('serves a chain the walk saw for another window from the walk, and nothing further ahead', async () => {
    let now = 0;
    const indexes = new EntityIndexes({ now: () => now, ttlMs: 5_000, sweepEveryMs: 0 });
    const index = indexes.for<Loc>('A', 'locations');
    const list = records('a', 5);
    keepChain(index, list, 2, 0);
    now = 4_000;
    expect(await indexes.confirmed('A', 'locations', { records: list.map((r) => ({ ...r })) }, 3_000)).toBe(true);
    expect(index.freshUntil).toBe(8_000);
    now = 7_999;
    expect(index.keptPage(keptKey('r2', 2, ''))?.items).toEqual(list.slice(2, 4));
    // A walk asked for earlier than the lifetime began moves nothing.
    expect(await indexes.confirmed('A', 'locations', { records: list }, 1_000)).toBe(true);
    expect(index.freshUntil).toBe(8_000);
    now = 8_000;
    expect(index.keptPage(keptKey('r2', 2, ''))).toBeUndefined();
  });

  it('confirms nothing the walk did not see as held: another version, a record gone, or a record come back where a kept page ended the list', async () => {
    const indexes = new EntityIndexes({ now: () => 1_000, ttlMs: 5_000, sweepEveryMs: 0 });
    const list = records('a', 4);
    const tries: Array<[string, Loc[]]> = [
      ['renamed', list.map((r, i) => (i === 1 ? { ...r, name: 'renamed' } : r))],
      ['gone', list.slice(1)],
      // Removed and added again within an interval: the kept chain ends before it.
      ['back', [...list, { id: 'x', name: 'x' }]],
      ['moved', [list[1]!, list[0]!, list[2]!, list[3]!]],
    ];
    for (const [name, walk] of tries) {
      const index = indexes.for<Loc>(name, 'locations');
      keepChain(index, list, 2, 1_000);
      expect([name, await indexes.confirmed(name, 'locations', { records: walk }, 2_000)]).toEqual([name, false]);
      expect(index.freshUntil).toBe(6_000);
    }
  });

  it('checks a long list in slices, and confirms nothing when something was learnt meanwhile', async () => {
    const indexes = new EntityIndexes({ now: () => 1_000, ttlMs: 5_000, sweepEveryMs: 0, maxRecords: 100_000 });
    const index = indexes.for<Loc>('A', 'locations');
    const list = records('a', 6_000);
    keepChain(index, list, 100, 1_000);
    const checked = indexes.confirmed('A', 'locations', { records: list }, 2_000);
    // Learnt while the check gives the event loop back: not part of what was checked.
    index.prime([{ id: 'late', name: 'late' }], 1_500);
    expect(await checked).toBe(false);
    expect(index.freshUntil).toBe(6_000);
    expect(await indexes.confirmed('A', 'locations', { records: [...list, { id: 'late', name: 'late' }] }, 2_000)).toBe(false);
  });

  it('drops a kept page it cannot place (read from a cursor, no chain from the first page) and confirms the rest', async () => {
    const indexes = new EntityIndexes({ now: () => 1_000, ttlMs: 5_000, sweepEveryMs: 0 });
    const index = indexes.for<Loc>('A', 'locations');
    const list = records('a', 4);
    keepChain(index, list, 2, 1_000);
    const loose: ListPage<Loc> = { ref: 'elsewhere', pageSize: 3, items: list.slice(1, 4), hasMore: false, next: null, previous: null };
    markFetched(loose, 1_000);
    index.keep(keptKey('elsewhere', 3, ''), loose, '');
    expect(index.keptPage(keptKey('elsewhere', 3, ''))).toBeDefined();
    expect(await indexes.confirmed('A', 'locations', { records: list }, 2_000)).toBe(true);
    expect(index.keptPage(keptKey('elsewhere', 3, ''))).toBeUndefined();
    expect(index.keptPage(keptKey(null, 2, ''))).toBeDefined();
    expect(index.freshUntil).toBe(7_000);
  });
});

describe('Freshness', () => {
  it('is decided by the oldest data used, and names every list read', () => {
    const used = new Freshness();
    expect(used.until).toBe(Infinity);
    used.use('locations', 9_000);
    used.use('shifts', 4_000);
    used.use('locations', 7_000);
    expect(used.until).toBe(4_000);
    expect([...used.lists]).toEqual(['locations', 'shifts']);
  });
});

describe('what an answer was made of (answers kept whole, docs/caching.md)', () => {
  const locations = RESOURCES.find((resource) => resource.name === 'locations')!;

  it('is the indexes its lists were reached through, while none forgot, and every page read upstream was asked for within the lifetime', () => {
    let now = 1_000;
    const indexes = new EntityIndexes({ now: () => now, ttlMs: 5_000, sweepEveryMs: 0 });
    const index = indexes.for<Loc>('A', 'locations');
    const used = () => {
      const freshness = new Freshness();
      freshness.from(locations, index);
      freshness.use('locations', index.freshUntil);
      return freshness;
    };
    const plain = used();
    plain.asked('locations', now);
    const sources = plain.answerSources()!;
    expect(sources.map((source) => source.resource.name)).toEqual(['locations']);
    expect(stillCurrent(sources)).toBe(true);

    // A page asked for before the index's lifetime began (a call joined before a change
    // was seen): the index does not learn it, and the answer is not kept whole either.
    now = 2_000;
    index.clear(1_500);
    const late = used();
    late.asked('locations', 1_400);
    expect(late.answerSources()).toBeUndefined();
    // What was made before the clear is no longer current.
    expect(stillCurrent(sources)).toBe(false);

    // A list read some other way (no index noted for it): not kept.
    const other = used();
    other.use('shifts', now + 5_000);
    expect(other.answerSources()).toBeUndefined();

    // The index forgot during the request: not kept; expired or released: not current.
    const during = used();
    index.changed();
    expect(during.answerSources()).toBeUndefined();
    const fresh = used().answerSources()!;
    now = 3_000;
    expect(stillCurrent(fresh)).toBe(true);
    // Expired: not current, and the index forgot (a new epoch: what a request reaching it now notes).
    const epoch = index.epoch;
    now = 8_000;
    expect(stillCurrent(fresh)).toBe(false);
    expect(index.epoch).toBe(epoch + 1);
    indexes.close();
    expect(stillCurrent(fresh)).toBe(false);
  });
});
