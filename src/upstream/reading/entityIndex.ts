/**
 * The short-lived per-tenant index of records by id (`EntityIndex`) and the process-wide
 * set of them (`EntityIndexes`), with its time to live, record bound and sweep: how
 * references are resolved without a detail endpoint (docs/upstream.md).
 */
import type { ListPage } from '../client';
import type { PageRef } from '../pageReference';
import { isMalformed, type MalformedRecord } from '../resources';
import { UPSTREAM_PAGE_SIZE } from '../endpoints';
import { guardPageChain } from './pageChain';
import { NO_OBSERVER, type Observer } from '../observer';
import { NUMERIC_SETTINGS } from '../../config';
import { fetchedAt } from './keptPages';
import { confirmSteps, type HeldPage, type WalkedList } from './confirmation';

/** How long, in ms, an index may answer from what it has seen: the default of `WFS_ENTITY_INDEX_TTL_SECONDS` (src/config.ts). */
export const ENTITY_INDEX_TTL_MS = NUMERIC_SETTINGS.WFS_ENTITY_INDEX_TTL_SECONDS.default * 1_000;

/**
 * Records all tenants' indexes may hold together (`WFS_ENTITY_INDEX_MAX_RECORDS`):
 * at most about 60 MB of heap at the measured 300 bytes a record or less (docs/operations.md, "Memory per company";
 * a record of longer texts counts as several, `recordUnits`),
 * which leaves a replica at the Kubernetes example's 256Mi request room for the rest.
 */
export const ENTITY_INDEX_MAX_RECORDS = NUMERIC_SETTINGS.WFS_ENTITY_INDEX_MAX_RECORDS.default;

/**
 * A record counts as one against the budget while its text (ids, names, dates) is at
 * most this many characters, which is what the 300 bytes a record were measured with;
 * a record with more counts as one more per this many. An upstream whose records carry
 * long texts then holds fewer of them, and the budget stays a memory budget.
 */
export const RECORD_UNIT_CHARACTERS = 150;

/** What a record counts against the budget (RECORD_UNIT_CHARACTERS). */
export function recordUnits(record: object): number {
  let characters = 0;
  // for...in, not Object.values: no array per record on the path every page takes.
  for (const key in record) {
    const value = (record as Record<string, unknown>)[key];
    if (typeof value === 'string') characters += value.length;
  }
  return 1 + Math.floor(characters / RECORD_UNIT_CHARACTERS);
}

/**
 * What a kept page counts on top of its records: one more per RECORD_UNIT_CHARACTERS
 * of its references, and one when it is empty (an upstream could send empty pages
 * with long references). An ordinary page adds nothing.
 */
function pageUnits(page: ListPage<unknown>): number {
  const characters = (page.ref?.length ?? 0) + (page.next?.length ?? 0) + (page.previous?.length ?? 0);
  return Math.floor(characters / RECORD_UNIT_CHARACTERS) + (page.items.length === 0 ? 1 : 0);
}

/** The longest an expired index waits for the sweep that releases it, in ms. */
const MAX_SWEEP_INTERVAL_MS = 5_000;

type FetchPage<T> = (ref: PageRef | null, pageSize: number) => Promise<ListPage<T>>;

/**
 * What an index tells the set that holds it: how many record units (`recordUnits`) it
 * took in (> 0) or let go (< 0), and each page it served only because a poll confirmed
 * it past the window (`saved`: without the poll it would have been read upstream).
 */
interface IndexHolder {
  resized(index: EntityIndex<{ id: string }>, delta: number): void;
  saved?(index: EntityIndex<{ id: string }>): void;
}

/** A page kept for queries, with its upstream filter (what `confirm` needs to place it). */
interface Kept<T> {
  readonly page: ListPage<T>;
  readonly filter: string;
}

/**
 * Lookup by id without a detail endpoint (docs/upstream.md, "Lookup by id"):
 * a short-lived index of one tenant's list, filled by scanning the list a page at a
 * time, only as far as the wanted ids need, and resumed where the last scan stopped.
 * Connection pages prime it too. Scans of one index run one at a time, so two
 * batches never read the same pages twice.
 *
 * It also keeps the pages it read at UPSTREAM_PAGE_SIZE, by reference, for as long as
 * its records: the request's page reader (pageCache.ts) serves a filtered scan, and a
 * scan of this index, from them, counting each against the request's call budget.
 *
 * An index can be cleared (it expired, or its tenant went over the memory budget
 * alone) or released (evicted, or expired and swept): a scan under way then still
 * answers from what it read itself, and moves the index on only while in step with it.
 */
export class EntityIndex<T extends { id: string }> {
  private records = new Map<string, T>();
  /** What the records count against the budget (`recordUnits`). */
  private units = 0;
  private pages = new Map<string, ListPage<T>>();
  /** Pages a request read from the upstream, kept to be served again within the freshness window (keptPages.ts), by `keptKey`. */
  private kept = new Map<string, Kept<T>>();
  /** Records in `kept`, each copy counted; and the most the index held in any lifetime (`recordsHeld`). */
  private keptRecords = 0;
  private peakRecords = 0;
  /**
   * Per page held (`k` + kept key, `s` + scanned reference): until when expiring alone
   * would have kept it, the window after it was read upstream or last counted as saved.
   * A page served later than that was served only because a poll confirmed it.
   */
  private paid = new Map<string, number>();
  /** Where the scan goes on: `undefined` before the first page, `null` when the list is done. */
  private resume: PageRef | null | undefined = undefined;
  private expiresAt: number;
  /** When the current lifetime began: everything held was asked of the upstream since (docs/caching.md). */
  private startedAt: number;
  /** Changes whenever the index forgets what it held, so a scan under way can tell. */
  private generation = 0;
  /** Changes whenever what the index holds changes (learnt, forgotten, the scan moved), so a confirmation under way can tell. */
  private version = 0;
  /**
   * Changes whenever the index forgets everything (`clear`: a change seen, its lifetime
   * ended, its tenant alone over the budget; `release`), and only then: an answer kept
   * whole (keptPages.ts, `AnswerSources`) is served again only while every index it read
   * from is in the epoch it read.
   */
  private forgotten = 0;
  private released = false;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly now: () => number,
    private readonly ttlMs: number,
    /** The tenant whose list this indexes (eviction never picks the tenant that is growing). */
    readonly tenantId: string = '',
    private readonly holder?: IndexHolder,
    private readonly observer: Observer = NO_OBSERVER,
    /** The list this indexes (what a page `saved` is counted for). */
    readonly list: string = '',
  ) {
    this.startedAt = now();
    this.expiresAt = this.startedAt + ttlMs;
  }

  /**
   * Until when what this index holds now is within its lifetime (ms): data it serves is
   * at most the lifetime old by then, since all of it was asked for after the lifetime
   * began.
   */
  get freshUntil(): number {
    return this.expiresAt;
  }

  /** Records held now. */
  get size(): number {
    return this.records.size;
  }

  /**
   * The most records this index held in any of its lifetimes, as many as its own or as
   * its kept pages held, whichever was more (a record kept under several filters or page
   * sizes counts each time): what a walk of the list reads at least, give or take those
   * copies. Over lifetimes, since a read that misses finds the index refilling after
   * its expiry, with a part of what the reads keep.
   */
  recordsHeld(): number {
    return Math.max(this.peakRecords, this.keptRecords, this.records.size);
  }

  /** What this index counts against the budget now, in record units (kept pages included). */
  get heldUnits(): number {
    return this.units;
  }

  /** When the current lifetime began (`startedAt`): a page asked for before is not learnt. */
  get lifetimeStart(): number {
    return this.startedAt;
  }

  /**
   * See `forgotten`: the same number while the index has forgotten nothing. A lifetime
   * that has ended is forgotten first (as any read of the index would), so a request
   * reaching an expired index notes the epoch its reads will find: the answer of the
   * first request after an expiry may be kept whole (wholeAnswers.ts).
   */
  get epoch(): number {
    this.expireIfStale();
    return this.forgotten;
  }

  /** True once evicted or swept: it holds and keeps nothing more; ask `EntityIndexes.for` for a fresh one. */
  get isReleased(): boolean {
    return this.released;
  }

  /**
   * Adds records seen elsewhere (a connection page), without moving the scan. A record
   * the index already holds is kept until the index expires: replacing it on every
   * page would turn each request's records into long-lived garbage for the old
   * generation to collect, for answers no fresher than the index's lifetime allows.
   */
  prime(records: readonly T[], since?: number): void {
    if (!this.writable() || !this.current(since)) return;
    if (since !== undefined && this.changedIn(records, undefined)) this.clear(since);
    const before = this.units;
    for (const record of records) if (!this.records.has(record.id)) this.hold(ownCopy(record));
    this.grew(before);
  }

  /** A page kept by `keep` under `key` (keptPages.ts `keptKey`), while the lifetime lasts. */
  keptPage(key: string): ListPage<T> | undefined {
    this.expireIfStale();
    const kept = this.kept.get(key)?.page;
    if (kept) this.served(`k${key}`);
    return kept;
  }

  /**
   * Keeps a page read from the upstream, to be served again under `key` until the
   * lifetime ends. Only a page asked for within the current lifetime, after its records
   * were learnt (`keepPage` or `prime`): every record of a kept page is then held in
   * its version, and a change seen later drops both together.
   */
  keep(key: string, page: ListPage<T>, filter: string): void {
    const since = fetchedAt(page);
    if (since === undefined || !this.writable() || !this.current(since) || this.kept.has(key)) return;
    const before = this.units;
    const items = page.items.map((item) => (isMalformed(item) ? item : ownCopy(item)));
    this.kept.set(key, { page: { ...page, items }, filter });
    this.keptRecords += items.length;
    this.peakRecords = Math.max(this.peakRecords, this.keptRecords, this.records.size);
    this.version += 1;
    this.paid.set(`k${key}`, since + this.ttlMs);
    for (const item of items) if (!isMalformed(item)) this.units += recordUnits(item);
    this.units += pageUnits(page) + 1;
    this.grew(before);
  }

  /**
   * Drops everything this index holds because its list changed upstream (a live poll
   * saw it, here or on another replica): the next read of any kind goes upstream.
   */
  changed(): void {
    if (this.units > 0) this.observer.cacheDropped('changed');
    this.clear();
  }

  /**
   * A walk of the whole list (a live poll's, whose first page was asked for at
   * `askedAt`) saw what this index holds: the lifetime starts again at `askedAt`, so
   * what is held is served until `askedAt` plus the lifetime, never more than that
   * ahead (docs/caching.md, "Watched lists"). Only when every record and page held is
   * what the walk saw (confirmation.ts); pages that cannot be checked are dropped. A
   * page asked for before `askedAt` is not learnt afterwards (`current`).
   */
  async confirm(walk: WalkedList<T>, askedAt: number): Promise<boolean> {
    // Expired meanwhile (or released): nothing held is left to confirm.
    if (!this.writable() || this.units === 0) return false;
    // Checked in slices; what is held must not change meanwhile (`version`), or nothing
    // is confirmed this time: what was learnt during the check was not checked.
    const version = this.version;
    const steps = confirmSteps(walk, { records: this.records, pages: [...this.heldPages()], complete: this.resume === null }, sameRecord);
    let step = steps.next();
    while (!step.done) {
      await new Promise((resolve) => setImmediate(resolve));
      if (this.version !== version || !this.writable()) return false;
      step = steps.next();
    }
    const verdict = step.value;
    const before = this.units;
    for (const key of verdict.unplaced) this.forgetPage(key);
    if (this.units < before) this.holder?.resized(this, this.units - before);
    if (!verdict.confirmed) return false;
    if (askedAt > this.startedAt) {
      this.startedAt = askedAt;
      this.expiresAt = Math.max(this.expiresAt, askedAt + this.ttlMs);
      // A scan under way may hold pages asked for before `askedAt`, which are no longer
      // learnt: it must not move the index's scan past them (`scanFor`).
      this.generation += 1;
    }
    return true;
  }

  /** Every page held, for `confirm`: the scan's (`s` + reference) and the kept ones (`k` + key). */
  private *heldPages(): Iterable<HeldPage<T>> {
    for (const [ref, page] of this.pages) yield { kind: 'scanned', key: `s${ref}`, filter: '', page };
    for (const [key, kept] of this.kept) yield { kind: 'kept', key: `k${key}`, filter: kept.filter, page: kept.page };
  }

  /** Drops one page held (a `heldPages` key); its records stay, as the index's. */
  private forgetPage(key: string): void {
    this.version += 1;
    this.paid.delete(key);
    if (key.startsWith('s')) {
      const page = this.pages.get(key.slice(1));
      if (page && this.pages.delete(key.slice(1))) this.units -= pageUnits(page);
      return;
    }
    const kept = this.kept.get(key.slice(1));
    if (!kept || !this.kept.delete(key.slice(1))) return;
    this.keptRecords -= kept.page.items.length;
    for (const item of kept.page.items) if (!isMalformed(item)) this.units -= recordUnits(item);
    this.units -= pageUnits(kept.page) + 1;
  }

  /** A held page served: counted as `saved` when expiring alone would no longer have kept it (`paid`). */
  private served(key: string): void {
    const now = this.now();
    const paidUntil = this.paid.get(key);
    if (paidUntil === undefined || now < paidUntil) return;
    this.paid.set(key, now + this.ttlMs);
    this.holder?.saved?.(this);
  }

  /**
   * Whether a page asked of the upstream at `since` may be learnt: not one asked for
   * before the current lifetime began (it may carry what a change, seen since, replaced).
   * A page from memory (`since` undefined) always may.
   */
  private current(since: number | undefined): boolean {
    return since === undefined || since >= this.startedAt;
  }

  /**
   * Whether records read from the upstream differ from what this index holds: a
   * record in another version, or (`held`, the page kept at the same reference) other
   * ids in its place. Then the list changed since the lifetime began, and what the
   * index holds, kept pages included, is older than what a request just saw.
   */
  private changedIn(records: ReadonlyArray<T | MalformedRecord>, held: ListPage<T> | undefined): boolean {
    for (let i = 0; i < records.length; i++) {
      const record = records[i]!;
      if (isMalformed(record)) continue;
      const there = held?.items[i];
      if (held && (there === undefined || isMalformed(there) || there.id !== record.id)) return true;
      // The held page's record in the same place is the index's own (records and pages
      // are dropped together): compared without a map lookup.
      const known = there ?? this.records.get(record.id);
      if (known !== undefined && known !== record && !sameRecord(known, record)) return true;
    }
    return held !== undefined && held.items.length !== records.length;
  }

  /** The record with `id` if this index holds it now (no scan, no promise). */
  peek(id: string): T | undefined {
    this.expireIfStale();
    return this.records.get(id);
  }

  /** A page this index holds (asked for at UPSTREAM_PAGE_SIZE from `ref`), or undefined. */
  page(ref: PageRef | null, pageSize: number): ListPage<T> | undefined {
    this.expireIfStale();
    const page = pageSize === UPSTREAM_PAGE_SIZE ? this.pages.get(ref ?? '') : undefined;
    if (page) this.served(`s${ref ?? ''}`);
    return page;
  }

  /**
   * Keeps a page's records, and the page itself when it was asked for at
   * UPSTREAM_PAGE_SIZE. What the index already holds stays, as in `prime`: a company
   * paging through its list again would otherwise replace every record and page a
   * fraction of a second after the last request kept them, and each replaced one,
   * by then moved to V8's old generation, would die there (a major collection per few
   * requests). The lifetime bounds how old a kept record can be either way.
   */
  keepPage(page: ListPage<T>, requestedSize: number): void {
    if (!this.writable()) return;
    // A page read from the upstream is checked against what the index holds: a record
    // in another version, or other ids where the same page was, is a change seen, and
    // everything held is dropped, the lifetime starting again when this page was asked
    // for (docs/caching.md, "One answer for one record").
    const since = fetchedAt(page);
    if (!this.current(since)) return;
    const key = page.ref ?? '';
    if (since !== undefined && this.changedIn(page.items, requestedSize === UPSTREAM_PAGE_SIZE ? this.pages.get(key) : undefined)) this.clear(since);
    const before = this.units;
    let items = page.items;
    const held = this.pages.get(key);
    if (requestedSize === UPSTREAM_PAGE_SIZE && !held) {
      items = items.map(ownCopy);
      this.pages.set(key, { ...page, items });
      this.version += 1;
      this.paid.set(`s${key}`, (since ?? this.now()) + this.ttlMs);
      this.units += pageUnits(page);
    }
    const copied = items !== page.items;
    for (let i = 0; i < items.length; i++) {
      const item = items[i]!;
      if (isMalformed(item)) continue;
      // The usual case, a page read again: the same ids in the same places as the page
      // held, whose records are all held (records and pages are only ever dropped
      // together): a string comparison each, not a map lookup.
      const there = held?.items[i];
      if (there !== undefined && !isMalformed(there) && there.id === item.id) continue;
      if (!this.records.has(item.id)) this.hold(copied ? item : ownCopy(item));
    }
    this.grew(before);
  }

  /**
   * Records for `ids`, in order; `null` for an id the list does not have. Every page
   * of the scan comes from `fetchPage` (the request's reader, which also serves the
   * pages this index holds), so the request's budget and deadline bound the scan.
   */
  lookup(ids: readonly string[], fetchPage: FetchPage<T>): Promise<Array<T | null>> {
    const run = this.queue.then(() => this.observer.entityLookup(ids.length, () => this.scanFor(ids, fetchPage)));
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Whether the lifetime has ended (the sweep releases such an index). */
  expired(): boolean {
    return this.now() >= this.expiresAt;
  }

  /** Forgets everything, and starts a new lifetime (at `from`, by default now). */
  clear(from: number = this.now()): void {
    const units = this.units;
    this.records = new Map();
    this.units = 0;
    this.pages = new Map();
    this.peakRecords = Math.max(this.peakRecords, this.keptRecords, this.records.size);
    this.kept = new Map();
    this.keptRecords = 0;
    this.paid = new Map();
    this.resume = undefined;
    this.generation += 1;
    this.version += 1;
    this.forgotten += 1;
    this.startedAt = from;
    this.expiresAt = from + this.ttlMs;
    if (units > 0) this.holder?.resized(this, -units);
  }

  /** Forgets everything for good: the holder dropped this index. */
  release(): void {
    this.released = true;
    this.clear();
  }

  private writable(): boolean {
    this.expireIfStale();
    return !this.released;
  }

  private hold(record: T): void {
    this.version += 1;
    this.records.set(record.id, record);
    this.units += recordUnits(record);
  }

  private grew(before: number): void {
    const added = this.units - before;
    if (added > 0) this.holder?.resized(this, added);
  }

  private expireIfStale(): void {
    if (this.now() < this.expiresAt) return;
    if (this.units > 0) this.observer.cacheDropped('expired');
    this.clear();
  }

  private async scanFor(ids: readonly string[], fetchPage: FetchPage<T>): Promise<Array<T | null>> {
    this.expireIfStale();
    const fetch = guardPageChain(fetchPage);
    // What this scan found, kept apart from the index: the index may be cleared or
    // released while the scan waits for a page, and the answer must not lose them.
    const found = new Map<string, T>();
    const missing = new Set<string>();
    for (const id of ids) {
      const record = this.records.get(id);
      if (record) found.set(id, record);
      else missing.add(id);
    }
    this.observer.cacheLookup('entity_index', ids.length - missing.size, missing.size);
    this.observer.entityLookupResult(missing.size > 0 && this.resume !== null ? 'scan' : 'hit');
    const generation = this.generation;
    let ref = this.resume;
    while (missing.size > 0 && ref !== null) {
      const page = await fetch(ref ?? null, UPSTREAM_PAGE_SIZE);
      for (const item of page.items) if (!isMalformed(item) && missing.delete(item.id)) found.set(item.id, item);
      ref = page.hasMore ? page.next : null;
      if (generation !== this.generation || this.released) continue;
      this.keepPage(page, UPSTREAM_PAGE_SIZE);
      // Keeping the page may have cleared the index (its tenant alone over the budget).
      if (generation === this.generation) {
        this.resume = ref;
        this.version += 1;
      }
    }
    return ids.map((id) => found.get(id) ?? null);
  }
}

/**
 * What an index keeps is its own copy, made here, never the object a request's page
 * was parsed into. V8 decides per allocation site whether new objects are born in
 * the old generation: had the index kept the page's records themselves, the first
 * pages of a list (all of them kept) would have taught V8 that the record mapping's
 * objects live long, and from then on every page of every request would be allocated
 * in the old generation and die there: on a company paging through its list, ten
 * times the bytes promoted and a full collection every few dozen requests. The copies
 * come from this one site, whose objects do live long.
 */
function ownCopy<R extends object>(record: R): R {
  return { ...record };
}

/**
 * Whether two versions of a record read alike: the same fields with the same values
 * (a nested value compared by its JSON). Records are flat but for the odd nested
 * value; this runs once per record of a page read from the upstream.
 */
function sameRecord(a: object, b: object): boolean {
  let fields = 0;
  for (const key in a) {
    fields += 1;
    const x = (a as Record<string, unknown>)[key];
    const y = (b as Record<string, unknown>)[key];
    if (x === y) continue;
    if (typeof x !== 'object' || typeof y !== 'object' || x === null || y === null || JSON.stringify(x) !== JSON.stringify(y)) return false;
  }
  for (const key in b) if (key !== undefined) fields -= 1;
  return fields === 0;
}

/** How the indexes of all tenants are bounded. */
export interface EntityIndexesOptions {
  readonly now?: () => number;
  /** How long, in ms, an index may answer from what it has seen. Default ENTITY_INDEX_TTL_MS. */
  readonly ttlMs?: number;
  /** Records all indexes may hold together, in record units (`recordUnits`); past it the least recently used tenant's go first. Default ENTITY_INDEX_MAX_RECORDS. */
  readonly maxRecords?: number;
  /** How often, in ms, expired indexes are released; 0: never by a timer (call `sweep()`). Default: a quarter of the lifetime, at most 5 s. */
  readonly sweepEveryMs?: number;
  /**
   * Called once sweeps released a quarter of the budget or more since the last call: at
   * most once a minute while indexes remain, and as soon as a sweep released the last
   * one. The place to ask V8 for a collection (`collectGarbage` in app.ts). Without one,
   * an idle process keeps the released records as garbage until it allocates again.
   */
  readonly afterLargeRelease?: () => void;
  /** Told of each lookup batch (a span with tracing on) and its cache hits and misses. */
  readonly observer?: Observer;
}

/** What a query's page read was, for a watching choice: read upstream, or served only because a poll confirmed it. */
export type ReadOutcome = 'miss' | 'saved';

/** Told of the reads a watching choice weighs (`EntityIndexes.listenToReads`); a miss names its page (`keptKey`). */
export type ReadListener = (tenantId: string, list: string, outcome: ReadOutcome, key?: string) => void;

/** The shortest time, in ms, between two `afterLargeRelease` calls. */
const LARGE_RELEASE_INTERVAL_MS = 60_000;

/**
 * The indexes of all tenants, one per tenant and list, never shared between tenants,
 * under one memory budget for the process: a bound on the records they hold
 * together. Past it, the least recently used tenant's indexes are dropped first; a
 * tenant alone over the budget starts its growing index over. An idle tenant's
 * index is released by a sweep once its lifetime ends, not only when touched again.
 *
 * Why not lru-cache (its `maxSize` and `sizeCalculation`): an entry's size is fixed
 * when it is set, while a tenant's indexes grow page by page during a scan (re-setting
 * the tenant on every kept page would re-run its eviction on the hot path); and an
 * entry larger than the budget is dropped whole, while here the tenant alone over the
 * budget keeps its other lists and starts only its growing index over, and the tenant
 * that is growing is never the one evicted. The recency order itself is a Map
 * re-inserted on use (`for`), and eviction 10 lines (`evictFor`).
 */
export class EntityIndexes implements IndexHolder {
  /** Per tenant, its lists' indexes; in the order of last use, least recent first. */
  private readonly tenants = new Map<string, Map<string, EntityIndex<{ id: string }>>>();
  private held = 0;
  /** The clock the indexes' lifetimes run on (readers stamp the pages they ask for with it). */
  readonly now: () => number;
  private readonly ttlMs: number;
  readonly maxRecords: number;
  private readonly timer: NodeJS.Timeout | undefined;
  private readonly afterLargeRelease: (() => void) | undefined;
  private lastLargeRelease = -Infinity;
  /** Record units sweeps released since the last `afterLargeRelease` call. */
  private releasedSinceCall = 0;
  private readonly observer: Observer;
  private reads: ReadListener | undefined;

  constructor(options: EntityIndexesOptions = {}) {
    this.now = options.now ?? Date.now;
    this.afterLargeRelease = options.afterLargeRelease;
    this.observer = options.observer ?? NO_OBSERVER;
    this.ttlMs = options.ttlMs ?? ENTITY_INDEX_TTL_MS;
    this.maxRecords = options.maxRecords ?? ENTITY_INDEX_MAX_RECORDS;
    const every = options.sweepEveryMs ?? Math.min(MAX_SWEEP_INTERVAL_MS, Math.max(1, this.ttlMs / 4));
    if (every > 0) {
      this.timer = setInterval(() => this.sweep(), every);
      this.timer.unref();
    }
  }

  /** The index of `tenantId`'s `list`; marks the tenant as the most recently used. */
  for<T extends { id: string }>(tenantId: string, list: string): EntityIndex<T> {
    let lists = this.tenants.get(tenantId);
    if (lists) this.tenants.delete(tenantId);
    else lists = new Map();
    this.tenants.set(tenantId, lists);
    let index = lists.get(list);
    if (!index) {
      index = new EntityIndex(this.now, this.ttlMs, tenantId, this, this.observer, list);
      lists.set(list, index);
    }
    return index as unknown as EntityIndex<T>;
  }

  /**
   * A company's list changed upstream (a live poll saw it, here or on another replica):
   * its index, with its kept pages, forgets everything at once.
   */
  changed(tenantId: string, list: string): void {
    this.tenants.get(tenantId)?.get(list)?.changed();
  }

  /**
   * A live poll walked `tenantId`'s whole `list` (its first page asked for at
   * `askedAt`) and saw no change: what the company's index holds of it, if the walk
   * confirms it, is served for another lifetime from `askedAt` (`EntityIndex.confirm`,
   * in slices). Whether it was confirmed; an index not held is not made for it.
   */
  async confirmed(tenantId: string, list: string, walk: WalkedList<{ id: string }>, askedAt: number): Promise<boolean> {
    const index = this.tenants.get(tenantId)?.get(list);
    if (!index || index.isReleased || index.heldUnits === 0) return false;
    const confirmed = await index.confirm(walk, askedAt);
    this.observer.cacheConfirmed(confirmed ? 'extended' : 'unconfirmed');
    return confirmed;
  }

  /**
   * Where the reads a watching choice weighs are told (live/watch.ts): each list page
   * a query asked of the upstream (`miss`, with the page's `keptKey`), and each page
   * served only because a poll confirmed it (`saved`). One listener; the live side sets
   * it at start-up.
   */
  listenToReads(listener: ReadListener): void {
    this.reads = listener;
  }

  /** A query of `tenantId`'s `list` read a page: see `listenToReads`. */
  noteRead(tenantId: string, list: string, outcome: ReadOutcome, key?: string): void {
    this.reads?.(tenantId, list, outcome, key);
  }

  saved(index: EntityIndex<{ id: string }>): void {
    this.reads?.(index.tenantId, index.list, 'saved');
  }

  /** Records the index of `tenantId`'s `list` holds now (`EntityIndex.recordsHeld`; 0: none held); does not mark the tenant as used. */
  heldOf(tenantId: string, list: string): number {
    return this.tenants.get(tenantId)?.get(list)?.recordsHeld() ?? 0;
  }

  /** Records held by all indexes now, in record units (`recordUnits`: a record of long texts counts as several). */
  get records(): number {
    return this.held;
  }

  /** Tenants with an index now. */
  get tenantCount(): number {
    return this.tenants.size;
  }

  /** Releases every index whose lifetime has ended (the timer calls this). */
  sweep(): void {
    const heldBefore = this.held;
    for (const [tenantId, lists] of this.tenants) {
      for (const [list, index] of lists) {
        if (!index.expired()) continue;
        lists.delete(list);
        if (index.heldUnits > 0) this.observer.cacheDropped('expired');
        index.release();
      }
      if (lists.size === 0) this.tenants.delete(tenantId);
    }
    // Counted over sweeps, not per sweep: an index expires a lifetime after its company's
    // last read, so what a busy replica held is released over several sweeps once it goes
    // quiet, and on a slow browse no single one reached a quarter of the budget (the idle
    // heap then stayed at 2.5x its size before the browse: docs/operations.md, "Memory per
    // company"). The last index gone means the replica is idle: nothing will replace the
    // garbage, and a collection then is cheap, so the minute between calls is not waited.
    this.releasedSinceCall += heldBefore - this.held;
    const now = this.now();
    const due = this.tenants.size === 0 || now - this.lastLargeRelease >= LARGE_RELEASE_INTERVAL_MS;
    if (this.afterLargeRelease && this.releasedSinceCall >= this.maxRecords / 4 && due) {
      this.lastLargeRelease = now;
      this.releasedSinceCall = 0;
      this.afterLargeRelease();
    }
  }

  /** Stops the sweep timer and releases everything. */
  close(): void {
    clearInterval(this.timer);
    for (const [tenantId, lists] of this.tenants) this.drop(tenantId, lists);
  }

  /**
   * Counts (or, negative, gives back) `units` held outside the indexes against the same
   * budget: the live pollers' snapshots (src/live). Past the budget the least recently
   * used tenants' indexes are dropped, as for a growing index.
   */
  charge(units: number): void {
    this.held += units;
    if (units <= 0) return;
    for (const [tenantId, lists] of this.tenants) {
      if (this.held <= this.maxRecords) return;
      this.drop(tenantId, lists);
    }
  }

  resized(index: EntityIndex<{ id: string }>, delta: number): void {
    this.held += delta;
    if (delta > 0 && this.held > this.maxRecords) this.evictFor(index);
  }

  private evictFor(growing: EntityIndex<{ id: string }>): void {
    for (const [tenantId, lists] of this.tenants) {
      if (this.held <= this.maxRecords) return;
      if (tenantId !== growing.tenantId) this.drop(tenantId, lists);
    }
    // The growing tenant alone is over the budget: it starts over rather than outgrow it.
    if (this.held > this.maxRecords) growing.clear();
  }

  private drop(tenantId: string, lists: Map<string, EntityIndex<{ id: string }>>): void {
    this.tenants.delete(tenantId);
    for (const index of lists.values()) index.release();
  }
}
