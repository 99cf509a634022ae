/**
 * Lookup by id without a detail endpoint (docs/upstream.md, "Lookup by id"): a company's
 * list scanned a page at a time, only as far as the wanted ids need, and resumed where
 * the last scan stopped. Scans of one index run one at a time, so two batches never
 * read the same pages twice. The index (entityIndex.ts) learns each page a scan reads
 * while the scan is in step with it.
 */
import type { ListPage } from '../client';
import { UPSTREAM_PAGE_SIZE } from '../endpoints';
import type { Observer } from '../observer';
import type { PageRef } from '../pageReference';
import { isMalformed } from '../resources';
import { guardPageChain } from './pageChain';

/** Reads one page of the list (the request's reader, which also serves the pages the index holds). */
export type FetchPage<T> = (ref: PageRef | null, pageSize: number) => Promise<ListPage<T>>;

/** What a scan needs of the index it fills. */
export interface ScannedIndex<T> {
  /** The records held now, once the index has forgotten what outlived its lifetime. */
  heldRecords(): ReadonlyMap<string, T>;
  /** Changes whenever a page read before may no longer be learnt (epochs.ts, `generation`). */
  generation(): number;
  released(): boolean;
  /** Learns a page the scan read. */
  keepPage(page: ListPage<T>, requestedSize: number): void;
  /** The scan moved on: what the index holds changed. */
  moved(): void;
}

/** The scans of one index: where they go on, and the queue that runs them one at a time. */
export class ListScan<T extends { id: string }> {
  /** Where the scan goes on: `undefined` before the first page, `null` when the list is done. */
  private resume: PageRef | null | undefined = undefined;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly index: ScannedIndex<T>,
    private readonly observer: Observer,
  ) {}

  /** The scan ran to the end of the list: the index answers "no such record" without reading. */
  get complete(): boolean {
    return this.resume === null;
  }

  /** The index forgot what it held: the next scan starts at the first page. */
  restart(): void {
    this.resume = undefined;
  }

  /**
   * Records for `ids`, in order; `null` for an id the list does not have. Every page
   * of the scan comes from `fetchPage`, so the request's budget and deadline bound it.
   */
  lookup(ids: readonly string[], fetchPage: FetchPage<T>): Promise<Array<T | null>> {
    const run = this.queue.then(() => this.observer.entityLookup(ids.length, () => this.scanFor(ids, fetchPage)));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async scanFor(ids: readonly string[], fetchPage: FetchPage<T>): Promise<Array<T | null>> {
    const held = this.index.heldRecords();
    const fetch = guardPageChain(fetchPage);
    // What this scan found, kept apart from the index: the index may be cleared or
    // released while the scan waits for a page, and the answer must not lose them.
    const found = new Map<string, T>();
    const missing = new Set<string>();
    for (const id of ids) {
      const record = held.get(id);
      if (record) found.set(id, record);
      else missing.add(id);
    }
    this.observer.cacheLookup('entity_index', ids.length - missing.size, missing.size);
    this.observer.entityLookupResult(missing.size > 0 && this.resume !== null ? 'scan' : 'hit');
    const generation = this.index.generation();
    let ref = this.resume;
    while (missing.size > 0 && ref !== null) {
      const page = await fetch(ref ?? null, UPSTREAM_PAGE_SIZE);
      for (const item of page.items) if (!isMalformed(item) && missing.delete(item.id)) found.set(item.id, item);
      ref = page.hasMore ? page.next : null;
      if (generation !== this.index.generation() || this.index.released()) continue;
      this.index.keepPage(page, UPSTREAM_PAGE_SIZE);
      // Keeping the page may have cleared the index (its tenant alone over the budget).
      if (generation === this.index.generation()) {
        this.resume = ref;
        this.index.moved();
      }
    }
    return ids.map((id) => found.get(id) ?? null);
  }
}
