import { EntityIndexes } from '../../src/upstream/reading/entityIndex';
import { Freshness, keptKey, markFetched } from '../../src/upstream/reading/keptPages';
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
