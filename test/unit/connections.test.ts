import { GraphQLError } from 'graphql';
import type { ListPage } from '../../src/upstream/client';
import { checkConnectionArgs, resolveConnection, type ConnectionSource } from '../../src/graphql/data/connections';
import { CursorCodec } from '../../src/graphql/data/cursor';
import type { MalformedRecord } from '../../src/upstream/records';

type Item = { id: string };

/**
 * An upstream list of `total` items, paged by page NUMBER (`p=<n>`) at the requested
 * size, clamped to `maxSize`: the scheme that breaks if a walk changes its page size.
 */
function source(total: number, maxSize: number, malformedAt: number[] = []) {
  const codec = new CursorCodec(Buffer.from('s'.repeat(32)));
  const fetched: Array<string | null> = [];
  const sizes: number[] = [];
  const reported: MalformedRecord[] = [];
  const src: ConnectionSource<Item> = {
    async fetchPage(ref, pageSize) {
      fetched.push(ref);
      const size = Math.min(pageSize, maxSize);
      sizes.push(size);
      const n = ref ? Number(ref.slice(2)) : 0;
      const items: Array<Item | MalformedRecord> = [];
      for (let i = n * size; i < Math.min(total, (n + 1) * size); i += 1) {
        items.push(malformedAt.includes(i) ? { malformed: true, reason: 'bad' } : { id: `i${i}` });
      }
      const hasMore = (n + 1) * size < total;
      return { ref, pageSize: size, items, hasMore, next: hasMore ? `p=${n + 1}` : null, previous: n > 0 ? `p=${n - 1}` : null } satisfies ListPage<Item>;
    },
    decodeCursor: (cursor, argument) => codec.decode(cursor, 't', 'locations', argument),
    encodeCursor: (position) => codec.encode('t', 'locations', position),
    reportMalformed: (item) => reported.push(item),
  };
  return { src, fetched, sizes, reported };
}

const ids = (page: { edges: ReadonlyArray<{ node: Item }> }) => page.edges.map((e) => e.node.id);

describe('Relay connections over upstream pages', () => {
  it('walks the whole list with first/after, every id once and in order', async () => {
    const { src } = source(35, 8);
    const seen: string[] = [];
    let after: string | null = null;
    for (;;) {
      const page: Awaited<ReturnType<typeof resolveConnection<Item>>> = await resolveConnection(src, checkConnectionArgs({ first: 10, after }));
      seen.push(...ids(page));
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    expect(seen).toEqual(Array.from({ length: 35 }, (_, i) => `i${i}`));
  });

  it('resumes right after any edge cursor, including mid-page ones', async () => {
    const { src } = source(35, 8);
    const all = await resolveConnection(src, checkConnectionArgs({ first: 35 }));
    for (const at of [0, 4, 7, 8, 20, 33]) {
      const next = await resolveConnection(src, checkConnectionArgs({ first: 3, after: all.edges[at]!.cursor }));
      expect(ids(next)).toEqual(ids(all).slice(at + 1, at + 4));
      expect(next.pageInfo.hasPreviousPage).toBe(true);
    }
  });

  it('pages backward with last/before across pages', async () => {
    const { src } = source(35, 8);
    const all = await resolveConnection(src, checkConnectionArgs({ first: 35 }));
    const back = await resolveConnection(src, checkConnectionArgs({ last: 10, before: all.edges[20]!.cursor }));
    expect(ids(back)).toEqual(ids(all).slice(10, 20));
    expect(back.pageInfo).toMatchObject({ hasPreviousPage: true, hasNextPage: true });
    const start = await resolveConnection(src, checkConnectionArgs({ last: 10, before: all.edges[5]!.cursor }));
    expect(ids(start)).toEqual(ids(all).slice(0, 5));
    expect(start.pageInfo.hasPreviousPage).toBe(false);
  });

  it('serves last without before from the end of the list', async () => {
    const { src } = source(35, 8);
    const tail = await resolveConnection(src, checkConnectionArgs({ last: 4 }));
    expect(ids(tail)).toEqual(['i31', 'i32', 'i33', 'i34']);
    expect(tail.pageInfo).toMatchObject({ hasPreviousPage: true, hasNextPage: false });
  });

  it('fetches only as many upstream pages, and records, as first needs', async () => {
    const { src, fetched, sizes } = source(500, 100);
    await resolveConnection(src, checkConnectionArgs({ first: 100 }));
    await resolveConnection(src, checkConnectionArgs({ first: 20 }));
    expect(fetched).toEqual([null, null]);
    expect(sizes).toEqual([100, 20]);
  });

  it('keeps a walk at one page size, so page-number references stay exact', async () => {
    const { src, sizes } = source(60, 100);
    const small = await resolveConnection(src, checkConnectionArgs({ first: 7 }));
    const bigger = await resolveConnection(src, checkConnectionArgs({ first: 30, after: small.pageInfo.endCursor }));
    expect(ids(bigger)).toEqual(Array.from({ length: 30 }, (_, i) => `i${i + 7}`));
    const back = await resolveConnection(src, checkConnectionArgs({ last: 20, before: bigger.edges[25]!.cursor }));
    expect(ids(back)).toEqual(Array.from({ length: 20 }, (_, i) => `i${i + 12}`));
    expect(new Set(sizes)).toEqual(new Set([7]));
  });

  it('resumes after the last record of a page with one upstream call', async () => {
    const { src, fetched } = source(30, 100);
    const first = await resolveConnection(src, checkConnectionArgs({ first: 10 }));
    fetched.length = 0;
    await resolveConnection(src, checkConnectionArgs({ first: 10, after: first.pageInfo.endCursor }));
    expect(fetched).toEqual(['p=1']);
  });

  it('skips a malformed item, reports it, and keeps positions stable', async () => {
    const { src, reported } = source(10, 5, [2]);
    const page = await resolveConnection(src, checkConnectionArgs({ first: 4 }));
    expect(ids(page)).toEqual(['i0', 'i1', 'i3', 'i4']);
    expect(reported).toHaveLength(1);
    const next = await resolveConnection(src, checkConnectionArgs({ first: 2, after: page.pageInfo.endCursor }));
    expect(ids(next)).toEqual(['i5', 'i6']);
  });

  it('stops a page chain that loops', async () => {
    const { src } = source(50, 5);
    const looping: ConnectionSource<Item> = { ...src, fetchPage: async (ref, size) => ({ ...(await src.fetchPage(ref, size)), hasMore: true, next: 'p=1' }) };
    await expect(resolveConnection(looping, checkConnectionArgs({ last: 3 }))).rejects.toMatchObject({ code: 'UPSTREAM_BAD_RESPONSE' });
  });

  it('refuses a repeated record whenever the same page objects come again (pages kept in memory)', async () => {
    // The same page objects on every walk, as kept pages are served: a page a walk
    // checked must still be checked against the pages before it on a later walk.
    const first: ListPage<Item> = { ref: null, pageSize: 3, items: [{ id: 'a' }, { id: 'b' }, { id: 'c' }], hasMore: true, next: 'p=1', previous: null };
    const overlaps: ListPage<Item> = { ref: 'p=1', pageSize: 3, items: [{ id: 'd' }, { id: 'c' }], hasMore: false, next: null, previous: null };
    const repeatsOwn: ListPage<Item> = { ...overlaps, items: [{ id: 'd' }, { id: 'd' }] };
    const { src } = source(0, 3);
    const walk = (...pages: Array<ListPage<Item>>): ConnectionSource<Item> => ({ ...src, fetchPage: async (ref) => pages[ref === null ? 0 : 1]! });
    for (let round = 0; round < 2; round += 1) {
      expect(ids(await resolveConnection(walk(overlaps), checkConnectionArgs({ first: 3 })))).toEqual(['d', 'c']);
      expect(ids(await resolveConnection(walk(first, overlaps), checkConnectionArgs({ first: 3 })))).toEqual(['a', 'b', 'c']);
      await expect(resolveConnection(walk(first, overlaps), checkConnectionArgs({ first: 6 }))).rejects.toMatchObject({ code: 'UPSTREAM_BAD_RESPONSE' });
      await expect(resolveConnection(walk(first, repeatsOwn), checkConnectionArgs({ first: 6 }))).rejects.toMatchObject({ code: 'UPSTREAM_BAD_RESPONSE' });
      await expect(resolveConnection(walk(repeatsOwn), checkConnectionArgs({ first: 3 }))).rejects.toMatchObject({ code: 'UPSTREAM_BAD_RESPONSE' });
    }
  });

  it.each([
    [{ first: 0 }], [{ first: -1 }], [{ first: 101 }], [{ last: 0 }], [{ first: 5, last: 5 }],
    [{ after: 'a', before: 'b' }], [{ first: 1, before: 'b' }], [{ last: 1, after: 'a' }],
  ])('refuses %p as BAD_USER_INPUT', (args) => {
    expect(() => checkConnectionArgs(args)).toThrow(GraphQLError);
    try {
      checkConnectionArgs(args);
    } catch (error) {
      expect((error as GraphQLError).extensions.code).toBe('BAD_USER_INPUT');
    }
  });

  it('defaults to the first 100', () => {
    expect(checkConnectionArgs({})).toEqual({ direction: 'forward', count: 100, cursor: null });
  });
});

describe('filtered connections', () => {
  // 1 000 items in pages of 100; every 97th matches.
  const matching = (item: Item) => Number(item.id.slice(1)) % 97 === 0;
  const filtered = (scanBound: number) => {
    const setup = source(1_000, 100);
    return { ...setup, src: { ...setup.src, filter: { matches: matching, scanBound } } satisfies ConnectionSource<Item> };
  };
  const want = Array.from({ length: 1_000 }, (_, i) => `i${i}`).filter((id) => matching({ id }));

  it('returns only matches, in order, reading pages of 100 whatever first is', async () => {
    const { src, sizes } = filtered(20);
    const page = await resolveConnection(src, checkConnectionArgs({ first: 3 }));
    expect(ids(page)).toEqual(want.slice(0, 3));
    expect(new Set(sizes)).toEqual(new Set([100]));
  });

  it('stops forward at the scan bound with an endCursor that resumes the scan', async () => {
    const { src, fetched } = filtered(2);
    const first = await resolveConnection(src, checkConnectionArgs({ first: 5 }));
    expect(ids(first)).toEqual(want.filter((id) => Number(id.slice(1)) < 200));
    expect(first.pageInfo.hasNextPage).toBe(true);
    expect(fetched).toHaveLength(2);
    const seen = [...ids(first)];
    let after = first.pageInfo.endCursor;
    while (after) {
      const page = await resolveConnection(src, checkConnectionArgs({ first: 5, after }));
      seen.push(...ids(page));
      after = page.pageInfo.hasNextPage ? page.pageInfo.endCursor : null;
    }
    expect(seen).toEqual(want);
  });

  it('stops backward at the scan bound with a startCursor that resumes the scan', async () => {
    const { src } = filtered(2);
    const all = await resolveConnection({ ...src, filter: { matches: matching, scanBound: 100 } }, checkConnectionArgs({ first: 100 }));
    const back = await resolveConnection(src, checkConnectionArgs({ last: 5, before: all.edges.at(-1)!.cursor }));
    expect(ids(back)).toEqual(want.filter((id) => Number(id.slice(1)) >= 800 && Number(id.slice(1)) < 970));
    expect(back.pageInfo).toMatchObject({ hasPreviousPage: true });
    // The cursor's own page is read again (it names a record on it), then one page before it.
    const further = await resolveConnection(src, checkConnectionArgs({ last: 100, before: back.pageInfo.startCursor }));
    expect(ids(further)).toEqual(want.filter((id) => Number(id.slice(1)) >= 700 && Number(id.slice(1)) < 800));
    expect(further.pageInfo.hasPreviousPage).toBe(true);
  });
});
