/**
 * The replica's memory budget (memory/budget.ts, `WFS_ENTITY_INDEX_MAX_RECORDS` record
 * units) as the cache's store sees it: a quarter of it for answers kept whole, and the
 * one place their charges go.
 */
import { UNIT_BYTES, type MemoryBudget } from '../memory/budget';

export { UNIT_BYTES };

/** What the store of answers kept whole may hold, and where it counts it. */
export interface CacheBudget {
  /** Bytes the answers may hold together: a quarter of the budget (15 MB at its default). */
  readonly maxBytes: number;
  /** Counts (or, negative, gives back) record units against the replica's budget; a charge past its limit has the indexes let go. */
  charge(units: number): void;
}

export function cacheBudget(budget: Pick<MemoryBudget, 'limit' | 'charge'>): CacheBudget {
  return { maxBytes: Math.floor(budget.limit / 4) * UNIT_BYTES, charge: (units) => budget.charge(units) };
}
