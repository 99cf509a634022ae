import type { ListPage } from '../upstream/client';
import type { PageRef } from '../upstream/pageReference';
import { isMalformed } from '../upstream/resources';
import { UPSTREAM_PAGE_SIZE } from '../upstream/endpoints';
import { guardPageChain } from './connections';
import { noteCacheLookups } from '../observability/hits';
import { noteEntityIndex, traceEntityLookup } from '../telemetry';

/** How long, in ms, an index may answer from what it has seen. Default 30 s. */
export const ENTITY_INDEX_TTL_MS = 30_000;

type FetchPage<T> = (ref: PageRef | null, pageSize: number) => Promise<ListPage<T>>;

/**
 * Lookup by id without a detail endpoint (CONTRACT.md section 4, "lookup by id"):
 * a short-lived index of one tenant's list, filled by scanning the list a page at a
 * time, only as far as the wanted ids need, and resumed where the last scan stopped.
 * Connection pages prime it too. Scans of one index run one at a time, so two
 * batches never read the same pages twice.
 *
 * It also keeps the pages it read at UPSTREAM_PAGE_SIZE, by reference, for as long as
 * its records: a filtered scan (which reads pages of that size) is served from them
 * without an upstream call, and its own pages are kept for the next one.
 */
export class EntityIndex<T extends { id: string }> {
  private records = new Map<string, T>();
  private pages = new Map<string, ListPage<T>>();
  /** Where the scan goes on: `undefined` before the first page, `null` when the list is done. */
  private resume: PageRef | null | undefined = undefined;
  private expiresAt: number;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly now: () => number,
    private readonly ttlMs: number,
  ) {
    this.expiresAt = now() + ttlMs;
  }

  /**
   * Adds records seen elsewhere (a connection page), without moving the scan. A record
   * the index already holds is kept until the index expires: replacing it on every
   * page would turn each request's records into long-lived garbage for the old
   * generation to collect, for answers no fresher than the index's lifetime allows.
   */
  prime(records: Iterable<T>): void {
    this.expireIfStale();
    for (const record of records) if (!this.records.has(record.id)) this.records.set(record.id, record);
  }

  /** The record with `id` if this index holds it now (no scan, no promise). */
  peek(id: string): T | undefined {
    this.expireIfStale();
    return this.records.get(id);
  }

  /** A page this index holds (asked for at UPSTREAM_PAGE_SIZE from `ref`), or undefined. */
  page(ref: PageRef | null, pageSize: number): ListPage<T> | undefined {
    this.expireIfStale();
    return pageSize === UPSTREAM_PAGE_SIZE ? this.pages.get(ref ?? '') : undefined;
  }

  /** Keeps a page's records, and the page itself when it was asked for at UPSTREAM_PAGE_SIZE. */
  keepPage(page: ListPage<T>, requestedSize: number): void {
    this.expireIfStale();
    if (requestedSize === UPSTREAM_PAGE_SIZE) this.pages.set(page.ref ?? '', page);
    for (const item of page.items) if (!isMalformed(item)) this.records.set(item.id, item);
  }

  /** Records for `ids`, in order; `null` for an id the list does not have. */
  lookup(ids: readonly string[], fetchPage: FetchPage<T>): Promise<Array<T | null>> {
    const run = this.queue.then(() => traceEntityLookup(ids.length, () => this.scanFor(ids, fetchPage)));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private expireIfStale(): void {
    if (this.now() < this.expiresAt) return;
    this.records = new Map();
    this.pages = new Map();
    this.resume = undefined;
    this.expiresAt = this.now() + this.ttlMs;
  }

  private async scanFor(ids: readonly string[], fetchPage: FetchPage<T>): Promise<Array<T | null>> {
    this.expireIfStale();
    // Pages it holds are read from memory, still through the loop guard.
    const fetch = guardPageChain((ref, pageSize) => {
      const held = this.page(ref, pageSize);
      return held ? Promise.resolve(held) : fetchPage(ref, pageSize);
    });
    let missing = new Set(ids.filter((id) => !this.records.has(id)));
    noteCacheLookups('entity_index', ids.length - missing.size, missing.size);
    noteEntityIndex(missing.size > 0 && this.resume !== null ? 'scan' : 'hit');
    while (missing.size > 0 && this.resume !== null) {
      const ref = this.resume ?? null;
      const page = await fetch(ref, UPSTREAM_PAGE_SIZE);
      this.keepPage(page, UPSTREAM_PAGE_SIZE);
      for (const item of page.items) if (!isMalformed(item)) missing.delete(item.id);
      this.resume = page.hasMore ? page.next : null;
    }
    return ids.map((id) => this.records.get(id) ?? null);
  }
}

/** The indexes of all tenants, one per tenant and list, never shared between tenants. */
export class EntityIndexes {
  private readonly indexes = new Map<string, EntityIndex<{ id: string }>>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly ttlMs: number = ENTITY_INDEX_TTL_MS,
  ) {}

  for<T extends { id: string }>(tenantId: string, list: string): EntityIndex<T> {
    const key = `${list}\u0000${tenantId}`;
    let index = this.indexes.get(key);
    if (!index) {
      index = new EntityIndex(this.now, this.ttlMs);
      this.indexes.set(key, index);
    }
    return index as unknown as EntityIndex<T>;
  }
}
