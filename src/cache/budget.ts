/**
 * The replica's memory budget (`WFS_ENTITY_INDEX_MAX_RECORDS`, in record units) as the
 * cache's store sees it: the one place its charges go. Today the entity indexes keep
 * that account (entityIndex.ts, `EntityIndexes.charge`); when the budget is a room of
 * its own, only this adapter changes.
 */
import type { EntityIndexes } from '../upstream/reading/entityIndex';

/** Bytes a record unit of the memory budget stands for (measured at about 300 bytes a record). */
export const UNIT_BYTES = 300;

/** What the store of answers kept whole may hold, and where it counts it. */
export interface CacheBudget {
  /** Bytes the answers may hold together: a quarter of the budget (15 MB at its default). */
  readonly maxBytes: number;
  /** Counts (or, negative, gives back) record units against the replica's budget; a charge may evict indexes. */
  charge(units: number): void;
}

export function cacheBudget(indexes: Pick<EntityIndexes, 'maxRecords' | 'charge'>): CacheBudget {
  return { maxBytes: Math.floor(indexes.maxRecords / 4) * UNIT_BYTES, charge: (units) => indexes.charge(units) };
}
