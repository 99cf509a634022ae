import type { ListPage } from '../upstream/client';
import type { PageRef } from '../upstream/pageReference';
import { isMalformed, type ListName } from '../upstream/records';
import { UPSTREAM_PAGE_SIZE } from '../upstream/endpoints';
import { guardPageChain } from './connections';

/** How long, in ms, an index may answer from what it has seen. Default 30 s. */
export const ENTITY_INDEX_TTL_MS = 30_000;

type FetchPage<T> = (ref: PageRef | null, pageSize: number) => Promise<ListPage<T>>;

/**
 * Lookup by id without a detail endpoint (CONTRACT.md section 4, "lookup by id"):
 * a short-lived index of one tenant's list, filled by scanning the list a page at a
 * time, only as far as the wanted ids need, and resumed where the last scan stopped.
 * Connection pages prime it too. Scans of one index run one at a time, so two
 * batches never read the same pages twice.
 */
export class EntityIndex<T extends { id: string }> {
  private records = new Map<string, T>();
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

  /** Records for `ids`, in order; `null` for an id the list does not have. */
  lookup(ids: readonly string[], fetchPage: FetchPage<T>): Promise<Array<T | null>> {
    const run = this.queue.then(() => this.scanFor(ids, fetchPage));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private expireIfStale(): void {
    if (this.now() < this.expiresAt) return;
    this.records = new Map();
    this.resume = undefined;
    this.expiresAt = this.now() + this.ttlMs;
  }

  private async scanFor(ids: readonly string[], fetchPage: FetchPage<T>): Promise<Array<T | null>> {
    this.expireIfStale();
    const fetch = guardPageChain(fetchPage);
    let missing = new Set(ids.filter((id) => !this.records.has(id)));
    while (missing.size > 0 && this.resume !== null) {
      const page = await fetch(this.resume ?? null, UPSTREAM_PAGE_SIZE);
      for (const item of page.items) {
        if (isMalformed(item)) continue;
        this.records.set(item.id, item);
        missing.delete(item.id);
      }
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

  for<T extends { id: string }>(tenantId: string, list: ListName): EntityIndex<T> {
    const key = `${list}\u0000${tenantId}`;
    let index = this.indexes.get(key);
    if (!index) {
      index = new EntityIndex(this.now, this.ttlMs);
      this.indexes.set(key, index);
    }
    return index as unknown as EntityIndex<T>;
  }
}
