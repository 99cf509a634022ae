/**
 * The records a company's entity index holds of one list, by id (entityIndex.ts), and
 * what a record counts against the replica's memory budget (memory/budget.ts): the
 * index's own copies, and whether a record read from the upstream says the list changed.
 */
import type { ListPage } from '../client';
import { isMalformed, type MalformedRecord } from '../resources';

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
 * What an index keeps is its own copy, made here, never the object a request's page
 * was parsed into. V8 decides per allocation site whether new objects are born in
 * the old generation: had the index kept the page's records themselves, the first
 * pages of a list (all of them kept) would have taught V8 that the record mapping's
 * objects live long, and from then on every page of every request would be allocated
 * in the old generation and die there: on a company paging through its list, ten
 * times the bytes promoted and a full collection every few dozen requests. The copies
 * come from this one site, whose objects do live long.
 */
export function ownCopy<R extends object>(record: R): R {
  return { ...record };
}

/**
 * Whether two versions of a record read alike: the same fields with the same values
 * (a nested value compared by its JSON). Records are flat but for the odd nested
 * value; this runs once per record of a page read from the upstream.
 */
export function sameRecord(a: object, b: object): boolean {
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

/**
 * One lifetime's records of an index, by id, each the index's own copy (`ownCopy`), and
 * what they count against the budget. A record held stays until the index forgets
 * everything (a new `HeldRecords`): replacing it on every page would turn each request's
 * records into long-lived garbage for the old generation to collect, for answers no
 * fresher than the index's lifetime allows.
 */
export class HeldRecords<T extends { id: string }> {
  private readonly byId = new Map<string, T>();
  private heldUnits = 0;

  /** Records held. */
  get size(): number {
    return this.byId.size;
  }

  /** What they count against the budget (`recordUnits`). */
  get units(): number {
    return this.heldUnits;
  }

  /** The records by id, as a confirmation checks them (confirmation.ts). */
  get all(): ReadonlyMap<string, T> {
    return this.byId;
  }

  get(id: string): T | undefined {
    return this.byId.get(id);
  }

  /**
   * Holds the records of `items` not held yet, each as the index's own copy (`copied`:
   * the items are copies already, the scanned page's). `held` is the page held at the
   * same reference, if any: whether anything was added.
   */
  learn(items: ReadonlyArray<T | MalformedRecord>, held: ListPage<T> | undefined, copied: boolean): boolean {
    const before = this.byId.size;
    for (let i = 0; i < items.length; i++) {
      const item = items[i]!;
      if (isMalformed(item)) continue;
      // The usual case, a page read again: the same ids in the same places as the page
      // held, whose records are all held (records and pages are only ever dropped
      // together): a string comparison each, not a map lookup.
      const there = held?.items[i];
      if (there !== undefined && !isMalformed(there) && there.id === item.id) continue;
      if (!this.byId.has(item.id)) this.add(copied ? item : ownCopy(item));
    }
    return this.byId.size !== before;
  }

  private add(record: T): void {
    this.byId.set(record.id, record);
    this.heldUnits += recordUnits(record);
  }

  /**
   * Whether records read from the upstream differ from what is held: a record in
   * another version, or (`held`, the page kept at the same reference) other ids in its
   * place. Then the list changed since the lifetime began, and what the index holds,
   * kept pages included, is older than what a request just saw.
   */
  changedIn(records: ReadonlyArray<T | MalformedRecord>, held: ListPage<T> | undefined): boolean {
    for (let i = 0; i < records.length; i++) {
      const record = records[i]!;
      if (isMalformed(record)) continue;
      const there = held?.items[i];
      if (held && (there === undefined || isMalformed(there) || there.id !== record.id)) return true;
      // The held page's record in the same place is the index's own (records and pages
      // are dropped together): compared without a map lookup.
      const known = there ?? this.byId.get(record.id);
      if (known !== undefined && known !== record && !sameRecord(known, record)) return true;
    }
    return held !== undefined && held.items.length !== records.length;
  }
}
