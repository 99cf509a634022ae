/**
 * The pages a company's entity index holds of one list, for one lifetime: those its
 * scans read at the upstream's page size (by reference), and those kept for queries
 * (keptPages.ts, by `keptKey`) with their upstream filter; what each counts against the
 * replica's memory budget on top of its records; and when serving one again counts as
 * `saved` (served only because a poll confirmed it past the window).
 */
import type { ListPage } from '../client';
import { isMalformed } from '../resources';
import type { HeldPage } from './confirmation';
import { RECORD_UNIT_CHARACTERS, ownCopy, recordUnits } from './records';

/**
 * What a held page counts on top of its records: one more per RECORD_UNIT_CHARACTERS
 * of its references, and one when it is empty (an upstream could send empty pages
 * with long references). An ordinary page adds nothing.
 */
export function pageUnits(page: ListPage<unknown>): number {
  const characters = (page.ref?.length ?? 0) + (page.next?.length ?? 0) + (page.previous?.length ?? 0);
  return Math.floor(characters / RECORD_UNIT_CHARACTERS) + (page.items.length === 0 ? 1 : 0);
}

/** A page kept for queries, with its upstream filter (what a confirmation needs to place it). */
interface Kept<T> {
  readonly page: ListPage<T>;
  readonly filter: string;
}

/**
 * One lifetime's pages of an index. Each is known here by a held key: `s` + reference
 * for a scanned page, `k` + kept key for a kept one (the keys `HeldPage` carries).
 * A scanned page's records are the index's (HeldRecords) and counted there; a kept
 * page's are its own copies and counted here, each copy once.
 */
export class HeldPages<T extends { id: string }> {
  private readonly scanned = new Map<string, ListPage<T>>();
  private readonly kept = new Map<string, Kept<T>>();
  /** Records in kept pages, each copy counted. */
  private keptCount = 0;
  private heldUnits = 0;
  /**
   * Per page held, by held key: until when expiring alone would have kept it, the window
   * after it was read upstream or last counted as saved. A page served later than that
   * was served only because a poll confirmed it.
   */
  private readonly paid = new Map<string, number>();

  /** What the pages count against the budget: kept pages with their records, scanned ones without (`pageUnits`). */
  get units(): number {
    return this.heldUnits;
  }

  /** Records in kept pages, a record kept under several filters or page sizes counted each time. */
  get keptRecords(): number {
    return this.keptCount;
  }

  /** The scanned page read from `ref` ('' for the first). */
  scannedAt(ref: string): ListPage<T> | undefined {
    return this.scanned.get(ref);
  }

  /** The page kept under `key`. */
  keptAt(key: string): ListPage<T> | undefined {
    return this.kept.get(key)?.page;
  }

  hasKept(key: string): boolean {
    return this.kept.has(key);
  }

  /**
   * Holds a page a scan read from `ref`, paid for until `paidUntil`, as copies of its
   * items (records.ts, `ownCopy`), which the index holds as its records too: they are
   * returned.
   */
  addScanned(ref: string, page: ListPage<T>, paidUntil: number): ListPage<T>['items'] {
    const items = page.items.map(ownCopy);
    this.scanned.set(ref, { ...page, items });
    this.paid.set(`s${ref}`, paidUntil);
    this.heldUnits += pageUnits(page);
    return items;
  }

  /** Holds a page kept for queries under `key`, as copies of its records; paid for until `paidUntil`. */
  addKept(key: string, page: ListPage<T>, filter: string, paidUntil: number): void {
    const items = page.items.map((item) => (isMalformed(item) ? item : ownCopy(item)));
    this.kept.set(key, { page: { ...page, items }, filter });
    this.keptCount += items.length;
    this.paid.set(`k${key}`, paidUntil);
    for (const item of items) if (!isMalformed(item)) this.heldUnits += recordUnits(item);
    this.heldUnits += pageUnits(page) + 1;
  }

  /**
   * The page under `heldKey` is served at `now`: whether that counts as `saved`, because
   * expiring alone would no longer have kept it (`paid`). If so it is paid for another
   * `ttlMs`, so one page is counted saved once a window.
   */
  servedSaved(heldKey: string, now: number, ttlMs: number): boolean {
    const paidUntil = this.paid.get(heldKey);
    if (paidUntil === undefined || now < paidUntil) return false;
    this.paid.set(heldKey, now + ttlMs);
    return true;
  }

  /** Every page held, for a confirmation: the scanned ones and the kept ones. */
  *all(): Iterable<HeldPage<T>> {
    for (const [ref, page] of this.scanned) yield { kind: 'scanned', key: `s${ref}`, filter: '', page };
    for (const [key, kept] of this.kept) yield { kind: 'kept', key: `k${key}`, filter: kept.filter, page: kept.page };
  }

  /** Drops the page under `heldKey` (a key of `all`); a scanned page's records stay, as the index's. */
  forget(heldKey: string): void {
    this.paid.delete(heldKey);
    const key = heldKey.slice(1);
    if (heldKey.startsWith('s')) {
      const page = this.scanned.get(key);
      if (page && this.scanned.delete(key)) this.heldUnits -= pageUnits(page);
      return;
    }
    const kept = this.kept.get(key);
    if (!kept || !this.kept.delete(key)) return;
    this.keptCount -= kept.page.items.length;
    for (const item of kept.page.items) if (!isMalformed(item)) this.heldUnits -= recordUnits(item);
    this.heldUnits -= pageUnits(kept.page) + 1;
  }
}
