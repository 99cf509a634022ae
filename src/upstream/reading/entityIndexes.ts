/**
 * The process-wide set of the companies' entity indexes (`EntityIndexes`, one per
 * company and list, entityIndex.ts): their time to live, their sweep, and what they hold
 * against the replica's memory budget (memory/budget.ts), of which they are the
 * reclaimer, least recently used company first.
 */
import { MemoryBudget, type Reclaimer } from '../../memory/budget';
import { NO_OBSERVER, type Observer } from '../observer';
import { NUMERIC_SETTINGS } from '../../config';
import type { WalkedList } from './confirmation';
import { EntityIndex, type IndexHolder } from './entityIndex';

/** How long, in ms, an index may answer from what it has seen: the default of `WFS_ENTITY_INDEX_TTL_SECONDS` (src/config.ts). */
export const ENTITY_INDEX_TTL_MS = NUMERIC_SETTINGS.WFS_ENTITY_INDEX_TTL_SECONDS.default * 1_000;

/**
 * Records all tenants' indexes may hold together (`WFS_ENTITY_INDEX_MAX_RECORDS`):
 * at most about 60 MB of heap at the measured 300 bytes a record or less (docs/operations.md, "Memory per company";
 * a record of longer texts counts as several, `recordUnits`),
 * which leaves a replica at the Kubernetes example's 256Mi request room for the rest.
 */
export const ENTITY_INDEX_MAX_RECORDS = NUMERIC_SETTINGS.WFS_ENTITY_INDEX_MAX_RECORDS.default;

/** The longest an expired index waits for the sweep that releases it, in ms. */
const MAX_SWEEP_INTERVAL_MS = 5_000;

/** The shortest time, in ms, between two `afterLargeRelease` calls. */
const LARGE_RELEASE_INTERVAL_MS = 60_000;

/** How the indexes of all tenants are bounded. */
export interface EntityIndexesOptions {
  readonly now?: () => number;
  /** How long, in ms, an index may answer from what it has seen. Default ENTITY_INDEX_TTL_MS. */
  readonly ttlMs?: number;
  /** The replica's memory budget, which the indexes are charged to and reclaim for. Default: one of `maxRecords` of their own. */
  readonly budget?: MemoryBudget;
  /** Without `budget`: records all indexes may hold together, in record units (`recordUnits`); past it the least recently used tenant's go first. Default ENTITY_INDEX_MAX_RECORDS. */
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

/**
 * The indexes of all tenants, one per tenant and list, never shared between tenants,
 * charged to the replica's memory budget. Past it, the least recently used tenant's
 * indexes are dropped first; a tenant alone over the budget starts its growing index
 * over. An idle tenant's index is released by a sweep once its lifetime ends, not only
 * when touched again.
 *
 * Why not lru-cache (its `maxSize` and `sizeCalculation`): an entry's size is fixed
 * when it is set, while a tenant's indexes grow page by page during a scan (re-setting
 * the tenant on every kept page would re-run its eviction on the hot path); and an
 * entry larger than the budget is dropped whole, while here the tenant alone over the
 * budget keeps its other lists and starts only its growing index over, and the tenant
 * that is growing is never the one evicted. The recency order itself is a Map
 * re-inserted on use (`for`), and eviction 10 lines (`reclaim`).
 */
export class EntityIndexes implements IndexHolder, Reclaimer {
  /** Per tenant, its lists' indexes; in the order of last use, least recent first. */
  private readonly tenants = new Map<string, Map<string, EntityIndex<{ id: string }>>>();
  /** The clock the indexes' lifetimes run on (readers stamp the pages they ask for with it). */
  readonly now: () => number;
  /** The replica's memory budget: the indexes charge it, and give back when it is over (`reclaim`). */
  readonly budget: MemoryBudget;
  private readonly ttlMs: number;
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
    this.budget = options.budget ?? new MemoryBudget(options.maxRecords ?? ENTITY_INDEX_MAX_RECORDS);
    this.budget.reclaimWith(this);
    const every = options.sweepEveryMs ?? Math.min(MAX_SWEEP_INTERVAL_MS, Math.max(1, this.ttlMs / 4));
    if (every > 0) {
      this.timer = setInterval(() => this.sweep(), every);
      this.timer.unref();
    }
  }

  /** The budget's limit, in record units (`MemoryBudget.limit`). */
  get maxRecords(): number {
    return this.budget.limit;
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

  /** Units held against the budget now, by the indexes and every other holder (`MemoryBudget.held`; a record of long texts counts as several). */
  get records(): number {
    return this.budget.held;
  }

  /** Tenants with an index now. */
  get tenantCount(): number {
    return this.tenants.size;
  }

  /** Releases every index whose lifetime has ended (the timer calls this). */
  sweep(): void {
    const heldBefore = this.budget.held;
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
    this.releasedSinceCall += heldBefore - this.budget.held;
    const now = this.now();
    const due = this.tenants.size === 0 || now - this.lastLargeRelease >= LARGE_RELEASE_INTERVAL_MS;
    if (this.afterLargeRelease && this.releasedSinceCall >= this.budget.limit / 4 && due) {
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
   * Counts (or, negative, gives back) `units` held outside the indexes against the
   * budget (`MemoryBudget.charge`): the wiring of whole answers (server.ts) charges
   * through here.
   */
  charge(units: number): void {
    this.budget.charge(units);
  }

  resized(index: EntityIndex<{ id: string }>, delta: number): void {
    this.budget.charge(delta, index);
  }

  /**
   * The budget is over its limit: the least recently used tenants' indexes are dropped
   * until it is within. An index that grew past it (`claimant`) keeps its tenant's
   * indexes; if that tenant alone is over, the growing index starts over rather than
   * outgrow it.
   */
  reclaim(claimant: unknown): void {
    const growing = claimant instanceof EntityIndex ? claimant : undefined;
    for (const [tenantId, lists] of this.tenants) {
      if (!this.budget.over) return;
      if (tenantId !== growing?.tenantId) this.drop(tenantId, lists);
    }
    if (growing && this.budget.over) growing.clear();
  }

  private drop(tenantId: string, lists: Map<string, EntityIndex<{ id: string }>>): void {
    this.tenants.delete(tenantId);
    for (const index of lists.values()) index.release();
  }
}
