/**
 * The replica's memory budget (`WFS_ENTITY_INDEX_MAX_RECORDS`), in record units of about
 * 300 bytes (docs/operations.md, "Memory per company"): one account that everything
 * kept past a request is charged to, the entity indexes (their records and kept pages),
 * the live pollers' snapshots and the answers kept whole, so that what they hold together
 * stays within what the replica's heap has room for.
 *
 * The budget only counts. Giving memory back is the holders' business: when a charge
 * takes the budget past its limit, the one reclaimer (the entity indexes, least recently
 * used company first) is asked to let go until it is within again. A holder that cannot
 * be asked (a snapshot, an answer store bounded by its own size) only charges and
 * releases.
 */

/** What lets go of memory when a charge took the budget past its limit. */
export interface Reclaimer {
  /**
   * Releases held units (each through `MemoryBudget.release`) until the budget is within
   * its limit or nothing is left to let go. `claimant` is who charged, as it passed
   * itself to `charge` (undefined: a holder outside the reclaimer): one the reclaimer
   * holds itself may be spared until last.
   */
  reclaim(claimant: unknown): void;
}

/** Bytes a unit of the budget stands for: a record of an entity index, measured at about 300 bytes of heap (docs/operations.md, "Memory per company"). */
export const UNIT_BYTES = 300;

/** One replica's budget of memory units: charged, released, and read by the `wfs_cache_held_units` gauge (`held`). */
export class MemoryBudget {
  private units = 0;
  private reclaimer: Reclaimer | undefined;

  /** `limit`: the units everything may hold together (`WFS_ENTITY_INDEX_MAX_RECORDS`). */
  constructor(readonly limit: number) {}

  /** Units held now, by every holder together (what the gauge shows). */
  get held(): number {
    return this.units;
  }

  /** Whether more is held than the limit allows. */
  get over(): boolean {
    return this.units > this.limit;
  }

  /** Who is asked to let go when a charge goes past the limit (one: the last set). */
  reclaimWith(reclaimer: Reclaimer): void {
    this.reclaimer = reclaimer;
  }

  /**
   * Counts `units` more held; past the limit, asks the reclaimer to let go, telling it
   * who charged (`claimant`). A negative charge gives units back, as `release` does: the
   * form the live snapshots and whole answers were first wired with.
   */
  charge(units: number, claimant?: unknown): void {
    this.units += units;
    if (units > 0 && this.units > this.limit) this.reclaimer?.reclaim(claimant);
  }

  /** Counts `units` as no longer held. */
  release(units: number): void {
    this.units -= units;
  }
}
