import { CursorCodec } from '../../src/graphql/data/cursor';
import { createContext, type ContextServices } from '../../src/graphql/data/context';
import { EntityIndex } from '../../src/upstream/reading/entityIndex';
import { EntityIndexes } from '../../src/upstream/reading/entityIndexes';
import { RECORD_UNIT_CHARACTERS, recordUnits } from '../../src/upstream/reading/records';
import type { ListPage, WfsClient } from '../../src/upstream/client';
import { CallBudget } from '../../src/upstream/resilience/callBudget';
import { UPSTREAM_PAGE_SIZE } from '../../src/upstream/endpoints';
import type { PageRef } from '../../src/upstream/pageReference';
import { RESOURCES, ResourceSet, shifts, type ShiftRecord } from '../../src/upstream/resources';

/**
 * The entity indexes under one memory budget (docs/operations.md, "Memory per company"): least recently used
 * tenants evicted first, idle indexes released by the sweep, a scan that stays right
 * when its index is dropped under it; and the in-memory work of a request stopping
 * once the request is over (item 3). Frozen clocks and counters, no waiting.
 */

type Rec = { id: string };

/** A list of `count` records served 100 a page, with page references `p2`, `p3`, …; counts its calls. */
function list(prefix: string, count: number) {
  const records: Rec[] = Array.from({ length: count }, (_, i) => ({ id: `${prefix}${i + 1}` }));
  let calls = 0;
  const fetchPage = async (ref: PageRef | null, pageSize: number): Promise<ListPage<Rec>> => {
    calls += 1;
    const page = ref === null ? 1 : Number(String(ref).slice(1));
    const items = records.slice((page - 1) * pageSize, page * pageSize);
    const hasMore = page * pageSize < count;
    return { ref, pageSize, items, hasMore, next: hasMore ? (`p${page + 1}` as PageRef) : null, previous: page > 1 ? (`p${page - 1}` as PageRef) : null };
  };
  return { records, fetchPage, calls: () => calls };
}

describe('EntityIndexes under a memory budget', () => {
  it('keeps the page and records it already holds when the same page is kept again, until its lifetime ends', () => {
    let now = 0;
    const indexes = new EntityIndexes({ now: () => now, ttlMs: 1_000, sweepEveryMs: 0 });
    const index = indexes.for<Rec & { v: number }>('A', 'locations');
    const page = (v: number): ListPage<Rec & { v: number }> => ({ ref: null, pageSize: UPSTREAM_PAGE_SIZE, items: [{ id: 'a1', v }], hasMore: false, next: null, previous: null });
    const first = page(1);
    index.keepPage(first, UPSTREAM_PAGE_SIZE);
    index.keepPage(page(2), UPSTREAM_PAGE_SIZE);
    expect(index.page(null, UPSTREAM_PAGE_SIZE)).toEqual(first);
    expect(index.peek('a1')).toEqual({ id: 'a1', v: 1 });
    // Its own copies (records.ts, `ownCopy`), never the objects the request's page was parsed into.
    expect(index.page(null, UPSTREAM_PAGE_SIZE)).not.toBe(first);
    expect(index.peek('a1')).not.toBe(first.items[0]);
    expect(index.page(null, UPSTREAM_PAGE_SIZE)!.items[0]).toBe(index.peek('a1'));
    expect(indexes.records).toBe(1);
    now = 1_000; // the lifetime is over: what is kept next is the newer page
    index.keepPage(page(3), UPSTREAM_PAGE_SIZE);
    expect(index.peek('a1')).toEqual({ id: 'a1', v: 3 });
  });

  it('evicts the least recently used tenant first when the records held pass the budget', async () => {
    const indexes = new EntityIndexes({ maxRecords: 500, sweepEveryMs: 0 });
    const a = list('a', 200);
    const b = list('b', 200);
    const c = list('c', 200);
    await indexes.for<Rec>('A', 'locations').lookup(['a200'], a.fetchPage);
    await indexes.for<Rec>('B', 'locations').lookup(['b200'], b.fetchPage);
    indexes.for('A', 'locations'); // A used again: B is now the least recent
    expect(indexes.records).toBe(400);

    await indexes.for<Rec>('C', 'locations').lookup(['c200'], c.fetchPage);
    expect(indexes.records).toBeLessThanOrEqual(500);
    expect(indexes.for<Rec>('B', 'locations').peek('b1')).toBeUndefined();
    expect(indexes.for<Rec>('A', 'locations').peek('a1')).toEqual({ id: 'a1' });
    expect(indexes.for<Rec>('C', 'locations').peek('c200')).toEqual({ id: 'c200' });
  });

  it('counts a record of long texts as several: the budget stays a memory budget whatever the upstream sends', async () => {
    expect(recordUnits({ id: 'loc_1', name: 'Amsterdam Centraal' })).toBe(1);
    expect(recordUnits({ id: 'loc_1', name: 'x'.repeat(10_000), n: 5 })).toBe(1 + Math.floor(10_005 / RECORD_UNIT_CHARACTERS));
    const indexes = new EntityIndexes({ maxRecords: 1_000, sweepEveryMs: 0 });
    const long = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => ({ id: `${prefix}${i}`, name: 'x'.repeat(10_000) }));
    // 67 units each: two tenants of 10 such records are 1 340 units, past the budget of 1 000.
    indexes.for('A', 'locations').prime(long('a', 10));
    expect(indexes.records).toBe(10 * recordUnits(long('a', 1)[0]!));
    indexes.for('B', 'locations').prime(long('b', 10));
    expect(indexes.records).toBeLessThanOrEqual(1_000);
    expect(indexes.for<{ id: string }>('A', 'locations').peek('a0')).toBeUndefined();
    expect(indexes.for<{ id: string }>('B', 'locations').peek('b9')).toBeDefined();
  });

  it('counts the pages it keeps: empty pages with long references cannot outgrow the budget either', () => {
    const indexes = new EntityIndexes({ maxRecords: 1_000, sweepEveryMs: 0 });
    const index = indexes.for<Rec>('A', 'shifts');
    const ref = (n: number) => `cursor=${String(n).padStart(2_000, '0')}` as PageRef;
    for (let n = 0; n < 100; n += 1) {
      index.keepPage({ ref: n === 0 ? null : ref(n), pageSize: UPSTREAM_PAGE_SIZE, items: [], hasMore: true, next: ref(n + 1), previous: null }, UPSTREAM_PAGE_SIZE);
    }
    // Each holds about 4 000 characters of references: 27 units; 100 of them would be 2 700.
    expect(indexes.records).toBeLessThanOrEqual(1_000);
    expect(indexes.records).toBeGreaterThan(0);
  });

  it('lets a tenant alone over the budget start over, and still answers its lookup', async () => {
    const indexes = new EntityIndexes({ maxRecords: 250, sweepEveryMs: 0 });
    const a = list('a', 1000);
    const found = await indexes.for<Rec>('A', 'shifts').lookup(['a1', 'a999'], a.fetchPage);
    expect(found).toEqual([{ id: 'a1' }, { id: 'a999' }]);
    expect(indexes.records).toBeLessThanOrEqual(250);
    // Nothing it forgot is claimed as absent: a later lookup scans again from the start.
    expect(await indexes.for<Rec>('A', 'shifts').lookup(['a5'], a.fetchPage)).toEqual([{ id: 'a5' }]);
  });

  it('releases an idle tenant\'s index when its lifetime ends, without the tenant being touched', async () => {
    let now = 0;
    const indexes = new EntityIndexes({ now: () => now, ttlMs: 30_000, sweepEveryMs: 0 });
    const a = list('a', 300);
    await indexes.for<Rec>('A', 'shifts').lookup(['a300'], a.fetchPage);
    expect(indexes.records).toBe(300);
    now = 29_999;
    indexes.sweep();
    expect(indexes.records).toBe(300);
    now = 30_000;
    indexes.sweep();
    expect(indexes.records).toBe(0);
    expect(indexes.tenantCount).toBe(0);
  });

  it('asks for a collection once sweeps released a quarter of the budget, at most once a minute while indexes remain', async () => {
    let now = 0;
    let collections = 0;
    const indexes = new EntityIndexes({ now: () => now, ttlMs: 30_000, maxRecords: 1000, sweepEveryMs: 0, afterLargeRelease: () => void (collections += 1) });
    const read = (tenant: string, count: number) => indexes.for<Rec>(tenant, 'shifts').lookup([`${tenant}${count}`], list(tenant, count).fetchPage);
    await read('a', 100);
    await read('b', 100);
    now = 10_000;
    await read('c', 100);
    now = 20_000;
    await read('d', 300);
    now = 30_000;
    indexes.sweep(); // a and b: a fifth of the budget
    expect(collections).toBe(0);
    now = 40_000;
    indexes.sweep(); // c: 300 released over two sweeps
    expect(collections).toBe(1);
    now = 45_000;
    await read('e', 300);
    now = 50_000;
    indexes.sweep(); // d: 300 again, but within the minute, and e is still held
    expect(collections).toBe(1);
    now = 75_000;
    indexes.sweep(); // e, the last index: the replica is idle, no minute to wait
    expect(indexes.tenantCount).toBe(0);
    expect(collections).toBe(2);
    now = 80_000;
    await read('f', 100);
    now = 110_000;
    indexes.sweep(); // the last index again, but a tenth of the budget
    expect(indexes.tenantCount).toBe(0);
    expect(collections).toBe(2);
  });

  it('keeps a scan right when its index is released while it waits for a page', async () => {
    const indexes = new EntityIndexes({ sweepEveryMs: 0 });
    const a = list('a', 300);
    const index = indexes.for<Rec>('A', 'shifts');
    let pages = 0;
    const found = await index.lookup(['a1', 'a300'], async (ref, size) => {
      pages += 1;
      if (pages === 2) indexes.close(); // dropped under the scan
      return a.fetchPage(ref, size);
    });
    expect(found).toEqual([{ id: 'a1' }, { id: 'a300' }]);
    expect(index.isReleased).toBe(true);
    expect(index.size).toBe(0);
    expect(indexes.records).toBe(0);
  });

  it('counts the pages of an index scan as the caller reads them (the held ones too)', async () => {
    const index = new EntityIndex<Rec>(() => 0, 30_000);
    const a = list('a', 250);
    for (const ref of [null, 'p2' as PageRef]) index.keepPage(await a.fetchPage(ref, UPSTREAM_PAGE_SIZE), UPSTREAM_PAGE_SIZE);
    const read: Array<PageRef | null> = [];
    await index.lookup(['a250'], (ref, size) => {
      read.push(ref);
      return index.page(ref, size) ? Promise.resolve(index.page(ref, size)!) : a.fetchPage(ref, size);
    });
    expect(read).toEqual([null, 'p2', 'p3']);
  });
});

describe('in-memory work of a request that is over', () => {
  const shift = (i: number): ShiftRecord => ({ id: `s${i}`, start: null, end: null, locationId: i % 10 === 0 ? 'L0' : 'L1', userId: null });
  const shiftPage = (page: number): ListPage<ShiftRecord> => ({
    ref: page === 1 ? null : (`p${page}` as PageRef),
    pageSize: UPSTREAM_PAGE_SIZE,
    items: Array.from({ length: 100 }, (_, i) => shift((page - 1) * 100 + i)),
    hasMore: page < 5,
    next: page < 5 ? (`p${page + 1}` as PageRef) : null,
    previous: null,
  });

  function contextWith(options: { deadlineMs: number; signal?: AbortSignal; onListPage?: () => void }) {
    const signal = options.signal ?? new AbortController().signal;
    let listCalls = 0;
    const client = {
      budgetFor: (s: AbortSignal) => new CallBudget(200, s, options.deadlineMs),
      authorize: async () => undefined,
      listPage: async (_tenant: string, _resource: unknown, { ref }: { ref: PageRef | null }) => {
        listCalls += 1;
        options.onListPage?.();
        return shiftPage(ref === null ? 1 : Number(String(ref).slice(1)));
      },
    } as unknown as WfsClient;
    const services: ContextServices = {
      client,
      cursors: new CursorCodec(Buffer.from('unit-test-cursor-secret-0123456789abcdef')),
      indexes: new EntityIndexes({ sweepEveryMs: 0 }),
      identify: async () => 'T',
      resources: new ResourceSet(RESOURCES),
    };
    return { context: createContext(services, {}, signal), services, listCalls: () => listCalls };
  }

  it('stops a filtered walk through held pages once the deadline has passed, before reading any', async () => {
    const { context, services, listCalls } = contextWith({ deadlineMs: 0 });
    const index = services.indexes.for<ShiftRecord>('T', 'shifts');
    for (let page = 1; page <= 5; page += 1) index.keepPage(shiftPage(page), UPSTREAM_PAGE_SIZE);
    const tenant = await context.tenant();
    await expect(tenant.connection(shifts, { first: 50 }, { filter: { locationId: 'L0' } })).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE', details: { cause: 'timeout' } });
    expect(listCalls()).toBe(0);
  });

  it('stops a walk at the next page once the client has gone', async () => {
    const client = new AbortController();
    let calls = 0;
    const { context, listCalls } = contextWith({ deadlineMs: 15_000, signal: client.signal, onListPage: () => void (++calls === 2 && client.abort()) });
    const tenant = await context.tenant();
    await expect(tenant.connection(shifts, { first: 100 }, { filter: { locationId: 'L0' } })).rejects.toThrow('the client went away');
    expect(listCalls()).toBe(2);
  });

  it('stops resolving entities from memory within a few records once the deadline has passed', async () => {
    const { context, services } = contextWith({ deadlineMs: 0 });
    services.indexes.for<ShiftRecord>('T', 'locations').prime(Array.from({ length: 1000 }, (_, i) => shift(i)));
    const tenant = await context.tenant();
    const locations = services.resources.named('locations')!;
    let served = 0;
    expect(() => {
      for (let i = 0; i < 1000; i += 1) if (tenant.held(locations, `s${i}`)) served += 1;
    }).toThrow('deadline passed');
    expect(served).toBeLessThan(100);
  });

  it('lets go of the pages it read once its response is out (context.release)', async () => {
    const { context, listCalls } = contextWith({ deadlineMs: 15_000 });
    const tenant = await context.tenant();
    await tenant.connection(shifts, { first: 100 });
    await tenant.connection(shifts, { first: 100 });
    expect(listCalls()).toBe(1); // the same page, once per request
    context.release();
    // Released: the request's page cache is empty, so the page is read again (nothing kept it alive).
    await tenant.connection(shifts, { first: 100 });
    expect(listCalls()).toBe(2);
  });
});
