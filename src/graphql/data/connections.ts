/**
 * Relay connections over the upstream's paged lists: the connection types, the checks on
 * `first`/`after`/`last`/`before`, and `resolveConnection`, which walks upstream pages
 * (a walk of the tenant's reader, whose page-chain guard bounds it) to build one page of
 * edges with its cursors.
 */
import type { ListPage } from '../../upstream/client';
import type { PageRef } from '../../upstream/pageReference';
import { isMalformed, type MalformedRecord } from '../../upstream/resources';
import type { CursorPosition } from './cursor';
import { badUserInput } from '../errors';
import { UpstreamError } from '../../upstream/errors';

export interface Edge<T> {
  readonly cursor: string;
  readonly node: T;
}

export interface PageInfo {
  readonly hasNextPage: boolean;
  readonly hasPreviousPage: boolean;
  readonly startCursor: string | null;
  readonly endCursor: string | null;
}

/** What a connection field resolves to; `nodes` is derived from `edges`. */
export interface ConnectionPage<T> {
  readonly edges: ReadonlyArray<Edge<T>>;
  readonly pageInfo: PageInfo;
}

export interface ConnectionArgs {
  readonly first?: number | null;
  readonly after?: string | null;
  readonly last?: number | null;
  readonly before?: string | null;
}

export const MAX_PAGE_SIZE = 100;
export const DEFAULT_PAGE_SIZE = 100;

/** Relay arguments, checked before any upstream call (docs/frontend.md, "For frontend teams": paging). */
export type PagingRequest =
  | { readonly direction: 'forward'; readonly count: number; readonly cursor: string | null }
  | { readonly direction: 'backward'; readonly count: number; readonly cursor: string | null };

export function checkConnectionArgs(args: ConnectionArgs): PagingRequest {
  const has = (value: unknown) => value !== undefined && value !== null;
  if (has(args.first) && has(args.last)) throw badUserInput('pass "first" or "last", not both');
  if (has(args.after) && has(args.before)) throw badUserInput('pass "after" or "before", not both');
  if (has(args.first) && has(args.before)) throw badUserInput('"before" pages backward: use it with "last", or use "after" with "first"');
  if (has(args.last) && has(args.after)) throw badUserInput('"after" pages forward: use it with "first", or use "before" with "last"');
  for (const name of ['first', 'last'] as const) {
    const value = args[name];
    if (has(value) && (!Number.isInteger(value) || (value as number) < 1 || (value as number) > MAX_PAGE_SIZE)) {
      throw badUserInput(`"${name}" must be an integer from 1 to ${MAX_PAGE_SIZE}, got ${String(value)}`);
    }
  }
  if (has(args.last) || has(args.before)) {
    return { direction: 'backward', count: args.last ?? DEFAULT_PAGE_SIZE, cursor: args.before ?? null };
  }
  return { direction: 'forward', count: args.first ?? DEFAULT_PAGE_SIZE, cursor: args.after ?? null };
}

/** What a connection needs from the rest of the server, for one tenant and one list. */
export interface ConnectionSource<T extends { id: string }> {
  /**
   * One upstream page of one walk, guarded against a chain that loops or never ends (a
   * walk of upstream/reading's TenantReader is); a walk keeps one page size from start
   * to end (see `resolveConnection`).
   */
  fetchPage(ref: PageRef | null, pageSize: number): Promise<ListPage<T>>;
  decodeCursor(cursor: string, argument: 'after' | 'before'): CursorPosition;
  encodeCursor(position: CursorPosition): string;
  /** An item of the wrong shape: reported as an error for that item, the page goes on. */
  reportMalformed(item: MalformedRecord): void;
  /**
   * A filtered connection: only records it accepts become edges. The walk then reads
   * pages of MAX_PAGE_SIZE whatever `first` is, and at most `scanBound` of them.
   */
  readonly filter?: { matches(record: T): boolean; readonly scanBound: number };
}

/**
 * The most upstream pages one filtered connection field scans (docs/upstream.md,
 * "How REST maps onto GraphQL"): a filter that matches little cannot make one request read a whole list.
 * Past it the field returns what it found with `hasNextPage: true` and an `endCursor`
 * (or, paging backward, a `startCursor`) that resumes the scan where it stopped.
 */
export const FILTER_SCAN_PAGES = 20;

/**
 * Maps Relay paging onto the upstream's page chain. A walk keeps one page size from
 * its first page to its last (a fresh forward walk asks for `first` records a page,
 * a resumed one the size its cursor recorded), because a page reference may be a
 * page number or offset that only means the same slice at the same size. So
 * (page reference, size, index) names an edge for good, and every edge cursor can be
 * resumed. Forward paging follows `next` as far as `first` needs;
 * backward paging follows `previous`; `last` without `before` walks to the end,
 * since the upstream offers no reference to its last page.
 */
export async function resolveConnection<T extends { id: string }>(
  source: ConnectionSource<T>,
  request: PagingRequest,
): Promise<ConnectionPage<T>> {
  const seen = new SeenRecords();
  const start = request.cursor ? source.decodeCursor(request.cursor, request.direction === 'forward' ? 'after' : 'before') : null;
  const result =
    request.direction === 'forward'
      ? await pageForward(source, seen, request.count, start)
      : start
        ? await pageBackward(source, seen, request.count, start)
        : await tail(source, seen, request.count);
  // A filtered scan that stopped at its bound points its end (or start) cursor at the
  // last record it read, matching or not, so the next request scans on from there.
  const stop = result.scanStop ? new StopEdge(result.scanStop, source) : undefined;
  return { edges: result.items, pageInfo: new LazyPageInfo(result, result.items, stop, request.direction) };
}

/**
 * A page's info, its start and end cursors signed on first read. A class, not an object
 * literal with getters: V8 allocates a literal's accessors in the old generation, and
 * their closures then held each request's page and edges through young-generation
 * collections until a full one (12 times the full collections on the no-sharing bench).
 */
class LazyPageInfo<N> implements PageInfo {
  readonly hasNextPage: boolean;
  readonly hasPreviousPage: boolean;

  constructor(
    slice: { readonly hasNextPage: boolean; readonly hasPreviousPage: boolean },
    private readonly edges: ReadonlyArray<Edge<N>>,
    /** Where a filtered scan stopped, if it did: the end (forward) or start (backward) cursor goes there. */
    private readonly stop: Edge<null> | undefined,
    private readonly direction: PagingRequest['direction'],
  ) {
    this.hasNextPage = slice.hasNextPage;
    this.hasPreviousPage = slice.hasPreviousPage;
  }

  get startCursor(): string | null {
    if (this.stop && this.direction === 'backward') return this.stop.cursor;
    return this.edges[0]?.cursor ?? null;
  }

  get endCursor(): string | null {
    if (this.stop && this.direction === 'forward') return this.stop.cursor;
    return this.edges.at(-1)?.cursor ?? null;
  }
}

/**
 * The edge of the record at `index` of an upstream page: one object per record, its
 * cursor position worked out and sealed only when a query reads `cursor` (a query for
 * `nodes` alone seals nothing). A class, not an object literal with a getter: V8 builds
 * a literal with an accessor on a slow path, and this runs for every record of every page.
 */
class PageEdge<T extends { id: string }> implements Edge<T> {
  private sealed: string | undefined;

  constructor(
    readonly node: T,
    private readonly page: ListPage<T>,
    private readonly index: number,
    private readonly source: ConnectionSource<T>,
  ) {}

  get cursor(): string {
    // The page it came on and its place there; a page's last edge also carries `next`.
    const { page, index } = this;
    this.sealed ??= this.source.encodeCursor(positionOf(page, index, index === page.items.length - 1 && page.hasMore));
    return this.sealed;
  }
}

/** The edge where a filtered scan stopped: only its cursor is read (its record did not match, or was malformed). */
class StopEdge<T extends { id: string }> implements Edge<null> {
  private sealed: string | undefined;
  readonly node = null;

  constructor(
    private readonly position: CursorPosition,
    private readonly source: ConnectionSource<T>,
  ) {}

  get cursor(): string {
    this.sealed ??= this.source.encodeCursor(this.position);
    return this.sealed;
  }
}

/**
 * A chain whose references differ but whose pages repeat (`?page=1` after the first
 * page fetched without a reference) loops too: a record seen twice in one walk is an
 * UPSTREAM_BAD_RESPONSE, never a duplicate edge.
 */
class SeenRecords {
  /** The walk's first page, its ids not yet in `ids`: most walks read one page, and need no set. */
  private first: ListPage<{ id: string }> | undefined;
  private ids: Set<string> | undefined;

  /** The page, once none of its records was seen before on this walk. */
  check<T extends { id: string }>(page: ListPage<T>): ListPage<T> {
    if (this.ids === undefined && this.first === undefined) {
      if (!repeatsNoId.has(page)) {
        this.add(page, new Set());
        repeatsNoId.add(page);
      }
      this.first = page;
      return page;
    }
    if (this.ids === undefined) {
      this.ids = new Set();
      this.add(this.first!, this.ids);
    }
    return this.add(page, this.ids);
  }

  private add<T extends { id: string }>(page: ListPage<T>, ids: Set<string>): ListPage<T> {
    for (const item of page.items) {
      if (isMalformed(item)) continue;
      if (ids.has(item.id)) {
        throw new UpstreamError('UPSTREAM_BAD_RESPONSE', `the upstream returned record ${item.id.slice(0, 80)} twice while following page references (a loop)`, { cause: 'broken_page_chain' });
      }
      ids.add(item.id);
    }
    return page;
  }
}

/**
 * Pages checked to repeat no id within themselves. Pages are never changed once read
 * (a kept page is served as it is to every request within the window), so a kept
 * page's first walk checks it for all the requests after: a set of 100 ids fewer each.
 */
const repeatsNoId = new WeakSet<object>();

interface Slice<T extends { id: string }> {
  items: PageEdge<T>[];
  hasNextPage: boolean;
  hasPreviousPage: boolean;
  /** A filtered scan stopped at its bound here, with records left to read. */
  scanStop?: CursorPosition;
}

/** Counts the pages a filtered walk reads; unfiltered walks are never cut short. */
function scanBudget<T extends { id: string }>(source: ConnectionSource<T>): { spent(): boolean; read(): void } {
  let pages = 0;
  const bound = source.filter?.scanBound ?? Infinity;
  return { spent: () => pages >= bound, read: () => void (pages += 1) };
}

function positionOf<T extends { id: string }>(page: ListPage<T>, index: number, withNext: boolean): CursorPosition {
  const item = page.items[index];
  const id = item && !isMalformed(item) ? item.id : '';
  return { ref: page.ref, size: page.pageSize, index: Math.max(0, index), id, ...(withNext && page.next !== null && { next: page.next }) };
}

/** The index of the cursor's record in its page: where it was, or where it moved to within the page. */
function indexIn<T extends { id: string }>(page: ListPage<T>, position: CursorPosition): number {
  const at = page.items[position.index];
  if (at && !isMalformed(at) && at.id === position.id) return position.index;
  const moved = page.items.findIndex((item) => !isMalformed(item) && item.id === position.id);
  return moved >= 0 ? moved : Math.min(position.index, page.items.length);
}

function take<T extends { id: string }>(source: ConnectionSource<T>, page: ListPage<T>, index: number): PageEdge<T> | null {
  const item = page.items[index]!;
  if (isMalformed(item)) {
    source.reportMalformed(item);
    return null;
  }
  if (source.filter && !source.filter.matches(item)) return null;
  return new PageEdge(item, page, index, source);
}

async function pageForward<T extends { id: string }>(source: ConnectionSource<T>, seen: SeenRecords, count: number, after: CursorPosition | null): Promise<Slice<T>> {
  // After a page's last record, go straight to the page that follows it.
  const size = after ? after.size : source.filter ? MAX_PAGE_SIZE : Math.min(count, MAX_PAGE_SIZE);
  const budget = scanBudget(source);
  let page = seen.check(await source.fetchPage(after ? (after.next ?? after.ref) : null, size));
  budget.read();
  let index = after ? (after.next ? 0 : indexIn(page, after) + 1) : 0;
  const items: PageEdge<T>[] = [];
  for (;;) {
    while (index < page.items.length) {
      if (items.length === count) return { items, hasNextPage: true, hasPreviousPage: after !== null };
      const edge = take(source, page, index);
      if (edge) items.push(edge);
      index += 1;
    }
    if (!page.hasMore || page.next === null) return { items, hasNextPage: false, hasPreviousPage: after !== null };
    if (items.length === count) return { items, hasNextPage: true, hasPreviousPage: after !== null };
    if (budget.spent()) return { items, hasNextPage: true, hasPreviousPage: after !== null, scanStop: positionOf(page, page.items.length - 1, true) };
    page = seen.check(await source.fetchPage(page.next, size));
    budget.read();
    index = 0;
  }
}

async function pageBackward<T extends { id: string }>(source: ConnectionSource<T>, seen: SeenRecords, count: number, before: CursorPosition): Promise<Slice<T>> {
  const budget = scanBudget(source);
  let page = seen.check(await source.fetchPage(before.ref, before.size));
  budget.read();
  let index = indexIn(page, before) - 1;
  const reversed: PageEdge<T>[] = [];
  for (;;) {
    while (index >= 0) {
      if (reversed.length === count) return { items: reversed.reverse(), hasNextPage: true, hasPreviousPage: true };
      const edge = take(source, page, index);
      if (edge) reversed.push(edge);
      index -= 1;
    }
    if (page.previous === null) return { items: reversed.reverse(), hasNextPage: true, hasPreviousPage: false };
    if (reversed.length === count) return { items: reversed.reverse(), hasNextPage: true, hasPreviousPage: true };
    if (budget.spent()) return { items: reversed.reverse(), hasNextPage: true, hasPreviousPage: true, scanStop: positionOf(page, 0, false) };
    page = seen.check(await source.fetchPage(page.previous, before.size));
    budget.read();
    index = page.items.length - 1;
  }
}

/**
 * The last `count` records: walks the chain to its end, keeping a window. A filtered
 * tail is not cut at the scan bound (the last matches can only be known at the end);
 * MAX_PAGES_PER_WALK still bounds it.
 */
async function tail<T extends { id: string }>(source: ConnectionSource<T>, seen: SeenRecords, count: number): Promise<Slice<T>> {
  let window: PageEdge<T>[] = [];
  let dropped = false;
  let page = seen.check(await source.fetchPage(null, MAX_PAGE_SIZE));
  for (;;) {
    for (let index = 0; index < page.items.length; index += 1) {
      const edge = take(source, page, index);
      if (edge) window.push(edge);
    }
    if (window.length > count) {
      window = window.slice(window.length - count);
      dropped = true;
    }
    if (!page.hasMore || page.next === null) return { items: window, hasNextPage: false, hasPreviousPage: dropped };
    page = seen.check(await source.fetchPage(page.next, MAX_PAGE_SIZE));
  }
}
