/**
 * The short-lived index of one company's list by id (`EntityIndex`): how references are
 * resolved without a detail endpoint (docs/upstream.md). What it holds is kept by job:
 * its records (records.ts), its pages (pages.ts), its lifetime and epochs (epochs.ts);
 * this module is the index those three make, its scan, and what it tells its holder
 * (entityIndexes.ts, the set of all companies' indexes under the memory budget).
 */
import type { ListPage } from '../client';
import type { PageRef } from '../pageReference';
import { UPSTREAM_PAGE_SIZE } from '../endpoints';
import { NO_OBSERVER, type Observer } from '../observer';
import { fetchedAt } from './keptPages';
import { confirmInSlices, type WalkedList } from './confirmation';
import { Epochs } from './epochs';
import { HeldPages } from './pages';
import { HeldRecords, sameRecord } from './records';
import { ListScan, type FetchPage } from './scan';

/**
 * What an index tells the set that holds it: how many record units (`recordUnits`) it
 * took in (> 0) or let go (< 0), and each page it served only because a poll confirmed
 * it past the window (`saved`: without the poll it would have been read upstream).
 */
export interface IndexHolder {
  resized(index: EntityIndex<{ id: string }>, delta: number): void;
  saved?(index: EntityIndex<{ id: string }>): void;
}

/**
 * Lookup by id without a detail endpoint (docs/upstream.md, "Lookup by id"):
 * a short-lived index of one tenant's list, filled by scanning the list as far as the
 * wanted ids need (scan.ts). Connection pages prime it too.
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
  private records = new HeldRecords<T>();
  /** The scan's pages, and the pages a request read from the upstream, kept to be served again within the freshness window (keptPages.ts). */
  private pages = new HeldPages<T>();
  /** The most records held at a `keep` (the index's own, or its kept pages') or when a lifetime ended (its kept pages'): `recordsHeld`. */
  private peakRecords = 0;
  private readonly epochs: Epochs;
  private released = false;
  private readonly scan: ListScan<T>;

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
    this.epochs = new Epochs(now(), ttlMs);
    this.scan = new ListScan<T>(
      {
        heldRecords: () => {
          this.expireIfStale();
          return this.records.all;
        },
        generation: () => this.epochs.generation,
        released: () => this.released,
        keepPage: (page, size) => this.keepPage(page, size),
        moved: () => this.epochs.changed(),
      },
      observer,
    );
  }

  /**
   * Until when what this index holds now is within its lifetime (ms): data it serves is
   * at most the lifetime old by then, since all of it was asked for after the lifetime
   * began.
   */
  get freshUntil(): number {
    return this.epochs.expiresAt;
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
    return Math.max(this.peakRecords, this.pages.keptRecords, this.records.size);
  }

  /** What this index counts against the budget now, in record units (kept pages included). */
  get heldUnits(): number {
    return this.records.units + this.pages.units;
  }

  /** When the current lifetime began (`startedAt`): a page asked for before is not learnt. */
  get lifetimeStart(): number {
    return this.epochs.startedAt;
  }

  /**
   * The same number while the index has forgotten nothing (epochs.ts, `forgotten`). A
   * lifetime that has ended is forgotten first (as any read of the index would), so a
   * request reaching an expired index notes the epoch its reads will find: the answer of
   * the first request after an expiry may be kept whole (wholeAnswers.ts).
   */
  get epoch(): number {
    this.expireIfStale();
    return this.epochs.forgotten;
  }

  /** True once evicted or swept: it holds and keeps nothing more; ask `EntityIndexes.for` for a fresh one. */
  get isReleased(): boolean {
    return this.released;
  }

  /**
   * Adds records seen elsewhere (a connection page), without moving the scan. A record
   * the index already holds is kept until the index expires (records.ts, `HeldRecords`).
   */
  prime(records: readonly T[], since?: number): void {
    if (!this.writable() || !this.epochs.current(since)) return;
    if (since !== undefined && this.records.changedIn(records, undefined)) this.clear(since);
    const before = this.heldUnits;
    if (this.records.learn(records, undefined, false)) this.epochs.changed();
    this.grew(before);
  }

  /** A page kept by `keep` under `key` (keptPages.ts `keptKey`), while the lifetime lasts. */
  keptPage(key: string): ListPage<T> | undefined {
    this.expireIfStale();
    const kept = this.pages.keptAt(key);
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
    if (since === undefined || !this.writable() || !this.epochs.current(since) || this.pages.hasKept(key)) return;
    const before = this.heldUnits;
    this.pages.addKept(key, page, filter, since + this.ttlMs);
    this.peakRecords = Math.max(this.peakRecords, this.pages.keptRecords, this.records.size);
    this.epochs.changed();
    this.grew(before);
  }

  /**
   * Drops everything this index holds because its list changed upstream (a live poll
   * saw it, here or on another replica): the next read of any kind goes upstream.
   */
  changed(): void {
    if (this.heldUnits > 0) this.observer.cacheDropped('changed');
    this.clear();
  }

  /**
   * A walk of the whole list (a live poll's, whose first page was asked for at
   * `askedAt`) saw what this index holds: the lifetime starts again at `askedAt`, so
   * what is held is served until `askedAt` plus the lifetime, never more than that
   * ahead (docs/caching.md, "Watched lists"). Only when every record and page held is
   * what the walk saw (confirmation.ts); pages that cannot be checked are dropped. A
   * page asked for before `askedAt` is not learnt afterwards (`Epochs.current`).
   */
  async confirm(walk: WalkedList<T>, askedAt: number): Promise<boolean> {
    // Expired meanwhile (or released): nothing held is left to confirm.
    if (!this.writable() || this.heldUnits === 0) return false;
    // Checked in slices; what is held must not change meanwhile (`version`).
    const version = this.epochs.version;
    const held = { records: this.records.all, pages: [...this.pages.all()], complete: this.scan.complete };
    const verdict = await confirmInSlices(walk, held, sameRecord, () => this.epochs.version === version && this.writable());
    if (!verdict) return false;
    const before = this.heldUnits;
    for (const key of verdict.unplaced) this.forgetPage(key);
    if (this.heldUnits < before) this.holder?.resized(this, this.heldUnits - before);
    if (!verdict.confirmed) return false;
    this.epochs.confirmedAt(askedAt);
    return true;
  }

  /** Drops one page held (a key of `HeldPages.all`); its records stay, as the index's. */
  private forgetPage(key: string): void {
    this.epochs.changed();
    this.pages.forget(key);
  }

  /** A held page served: told to the holder as `saved` when expiring alone would no longer have kept it. */
  private served(key: string): void {
    if (this.pages.servedSaved(key, this.now(), this.ttlMs)) this.holder?.saved?.(this);
  }

  /** The record with `id` if this index holds it now (no scan, no promise). */
  peek(id: string): T | undefined {
    this.expireIfStale();
    return this.records.get(id);
  }

  /** A page this index holds (asked for at UPSTREAM_PAGE_SIZE from `ref`), or undefined. */
  page(ref: PageRef | null, pageSize: number): ListPage<T> | undefined {
    this.expireIfStale();
    const page = pageSize === UPSTREAM_PAGE_SIZE ? this.pages.scannedAt(ref ?? '') : undefined;
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
    if (!this.epochs.current(since)) return;
    const key = page.ref ?? '';
    if (since !== undefined && this.records.changedIn(page.items, requestedSize === UPSTREAM_PAGE_SIZE ? this.pages.scannedAt(key) : undefined)) this.clear(since);
    const before = this.heldUnits;
    let items = page.items;
    const held = this.pages.scannedAt(key);
    if (requestedSize === UPSTREAM_PAGE_SIZE && !held) {
      items = this.pages.addScanned(key, page, (since ?? this.now()) + this.ttlMs);
      this.epochs.changed();
    }
    if (this.records.learn(items, held, items !== page.items)) this.epochs.changed();
    this.grew(before);
  }

  /**
   * Records for `ids`, in order; `null` for an id the list does not have. Every page
   * of the scan comes from `fetchPage` (the request's reader, which also serves the
   * pages this index holds), so the request's budget and deadline bound the scan.
   */
  lookup(ids: readonly string[], fetchPage: FetchPage<T>): Promise<Array<T | null>> {
    return this.scan.lookup(ids, fetchPage);
  }

  /** Whether the lifetime has ended (the sweep releases such an index). */
  expired(): boolean {
    return this.epochs.expired(this.now());
  }

  /** Forgets everything, and starts a new lifetime (at `from`, by default now). */
  clear(from: number = this.now()): void {
    const units = this.heldUnits;
    this.records = new HeldRecords();
    this.peakRecords = Math.max(this.peakRecords, this.pages.keptRecords);
    this.pages = new HeldPages();
    this.scan.restart();
    this.epochs.restart(from);
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

  private grew(before: number): void {
    const added = this.heldUnits - before;
    if (added > 0) this.holder?.resized(this, added);
  }

  private expireIfStale(): void {
    if (!this.expired()) return;
    if (this.heldUnits > 0) this.observer.cacheDropped('expired');
    this.clear();
  }
}
