/**
 * What a poller remembers of a list between two polls: each record's id and a
 * fingerprint of its content (not the record), so a change is found by id and
 * content and a snapshot costs a few dozen bytes a record.
 */
import type { MemoryBudget } from '../memory/budget';
import type { UpstreamRecord } from '../upstream/resources';

export type ChangeKind = 'ADDED' | 'UPDATED' | 'REMOVED';

/** One change between two polls; `record` is absent when removed. */
export interface RecordChange {
  readonly kind: ChangeKind;
  readonly id: string;
  readonly record?: UpstreamRecord;
  /** The record's fingerprint after the change (REMOVED: `REMOVED_FINGERPRINT`). */
  readonly fingerprint: number;
}

/** The fingerprint of a record that is gone. */
export const REMOVED_FINGERPRINT = -1;

/** id → fingerprint. */
export type Snapshot = Map<string, number>;

/**
 * FNV-1a (32 bits) of the record's JSON. A collision only hides an update whose two
 * versions hash alike (1 in 4 billion); the record's mapped fields are small.
 */
export function fingerprint(record: UpstreamRecord): number {
  const text = JSON.stringify(record);
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/**
 * The changes from `previous` to `records` (in list order, removals last), and the
 * snapshot of `records`. A record listed twice counts once (its last version).
 */
export function diff(previous: Snapshot, records: readonly UpstreamRecord[]): { changes: RecordChange[]; next: Snapshot } {
  const steps = diffSteps(previous, records, Infinity);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/** Records fingerprinted in one slice of `diffInSlices` (a few ms). */
export const DIFF_SLICE = 1_000;

/**
 * `diff`, giving the event loop back every `slice` records: fingerprinting a list of
 * 20 000 records (its JSON, hashed) took 160–300 ms in one go on a loaded 2-core
 * machine, a stall for every company's queries each poll.
 */
export async function diffInSlices(previous: Snapshot, records: readonly UpstreamRecord[], slice = DIFF_SLICE): Promise<{ changes: RecordChange[]; next: Snapshot }> {
  const steps = diffSteps(previous, records, slice);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** The work of `diff`, pausing (yielding) after every `slice` records. */
function* diffSteps(previous: Snapshot, records: readonly UpstreamRecord[], slice: number): Generator<void, { changes: RecordChange[]; next: Snapshot }> {
  const next: Snapshot = new Map();
  const changes: RecordChange[] = [];
  const latest = new Map<string, UpstreamRecord>();
  for (const record of records) latest.set(record.id, record);
  let done = 0;
  for (const [id, record] of latest) {
    if (++done % slice === 0) yield;
    const print = fingerprint(record);
    next.set(id, print);
    const before = previous.get(id);
    if (before === undefined) changes.push({ kind: 'ADDED', id, record, fingerprint: print });
    else if (before !== print) changes.push({ kind: 'UPDATED', id, record, fingerprint: print });
  }
  for (const id of previous.keys()) {
    if (!next.has(id)) changes.push({ kind: 'REMOVED', id, fingerprint: REMOVED_FINGERPRINT });
  }
  return { changes, next };
}

/**
 * Applies a change seen elsewhere (another replica's poll) to a snapshot; false when
 * the snapshot already says so (the change was delivered here already).
 */
export function apply(snapshot: Snapshot, change: RecordChange): boolean {
  const before = snapshot.get(change.id);
  if (change.kind === 'REMOVED') {
    if (before === undefined) return false;
    snapshot.delete(change.id);
    return true;
  }
  if (before === change.fingerprint) return false;
  snapshot.set(change.id, change.fingerprint);
  return true;
}

/**
 * A change of a whole list as one filter's subscriber sees it: a record that starts
 * matching comes as ADDED, one that stops matching as REMOVED, and one outside the
 * filter before and after not at all (undefined). `previous` is the record's version
 * before the change (the poller keeps them for filterable lists); a record whose
 * previous version is unknown counts as outside the filter before, except for a
 * removal, which is passed on (a client drops an id it does not hold).
 */
export function inScope(change: RecordChange, previous: UpstreamRecord | undefined, matches: (record: UpstreamRecord) => boolean): RecordChange | undefined {
  const was = previous ? matches(previous) : change.kind === 'REMOVED';
  const now = change.record ? matches(change.record) : false;
  if (was && now) return change;
  if (now) return { ...change, kind: 'ADDED' };
  if (was) return { kind: 'REMOVED', id: change.id, fingerprint: REMOVED_FINGERPRINT };
  return undefined;
}

/** Snapshot entries (an id and a number) counted as one record unit of the replica's memory budget (memory/budget.ts). */
export const SNAPSHOT_ENTRIES_PER_UNIT = 3;

/**
 * Charges every poller's snapshot of a replica against the memory budget, straight
 * from the poller: an entry (id and fingerprint) is a third of a record unit, a kept
 * record (the previous version of a filterable list's record) a unit.
 */
export class SnapshotMemory {
  private entries = 0;
  private records = 0;
  private charged = 0;

  constructor(private readonly budget: Pick<MemoryBudget, 'charge'>) {}

  resize(entries: number, records: number): void {
    this.entries += entries;
    this.records += records;
    const units = Math.ceil(this.entries / SNAPSHOT_ENTRIES_PER_UNIT) + this.records;
    if (units === this.charged) return;
    this.budget.charge(units - this.charged);
    this.charged = units;
  }
}
