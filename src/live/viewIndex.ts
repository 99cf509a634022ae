/**
 * Which of a list's views (the subscribers of one filter) a change concerns, found by
 * lookup rather than by trying every filter on every change. Trying each one made a
 * poll cost views × changes in one go: 3 000 distinct `startsFrom` windows and 2 000
 * changed shifts blocked the event loop for 2.3 s, every company's queries with it.
 *
 * A view sees a change when its filter matches the record before or after it
 * (`inScope` in snapshot.ts says how it sees it: as it is, ADDED or REMOVED). So the
 * index answers one question, "which filters match this record?", asked for the new
 * version and for the previous one. The list's `filterShape` (upstream/resources) says
 * what a filter is made of: equality fields (a shift's `locationId`) pick a bucket, a
 * record probing the buckets of its own values and of "any" (2^fields probes, 2 for
 * shifts); within a bucket the filters without a bound match every record, and the
 * ranges (`startsFrom`/`startsBefore`) are in a `RangeIndex`, sorted, so the ones that
 * hold the record's number are found in about log(views) steps plus one per match. A
 * change costs its lookups and its matches, never the views it does not concern.
 *
 * Every step (a bucket probed, a tree node visited, a view tried or reported) counts a
 * unit on the `WorkMeter`: the hub cuts its work into slices by it, and the tests hold
 * the index to "proportional to the changes and their matches" with it.
 */
import type { AnyResource, FilterShape, ListFilter, UpstreamRecord } from '../upstream/resources';
import { REMOVED_FINGERPRINT, type RecordChange } from './snapshot';

/** Counts the work done: one unit per bucket probed, tree node visited, view tried or reported. */
export interface WorkMeter {
  units: number;
}

export interface IndexedView {
  /** The view's filter; undefined: every change, as it is. */
  readonly filter: ListFilter | undefined;
}

/** Where a view sits. */
type Placement =
  | { readonly kind: 'unfiltered' }
  /** A filter the list's shape does not describe: tried on each record, one by one (the fallback; no list has one today). */
  | { readonly kind: 'scanned' }
  | { readonly kind: 'bucket'; readonly key: string; readonly bounded: boolean; readonly lo: number; readonly hi: number };

interface Bucket<V> {
  /** Filters of this bucket without a bound: every record of the bucket matches. */
  readonly unbounded: Set<V>;
  readonly ranged: RangeIndex<V>;
}

/** The key of the bucket of "any value" for an equality field. */
const ANY = null;

export class ViewIndex<V extends IndexedView> {
  private readonly placed = new Map<V, Placement>();
  private readonly unfiltered = new Set<V>();
  private readonly scanned = new Set<V>();
  private readonly buckets = new Map<string, Bucket<V>>();
  private readonly shape: FilterShape | undefined;
  private readonly equalFields: readonly string[];

  constructor(
    private readonly resource: AnyResource,
    private readonly meter: WorkMeter = { units: 0 },
  ) {
    this.shape = resource.filterShape;
    this.equalFields = this.shape ? Object.keys(this.shape.equal) : [];
  }

  get size(): number {
    return this.placed.size;
  }

  add(view: V): void {
    if (this.placed.has(view)) return;
    const placement = this.placementOf(view.filter);
    this.placed.set(view, placement);
    if (placement.kind === 'unfiltered') this.unfiltered.add(view);
    else if (placement.kind === 'scanned') this.scanned.add(view);
    else {
      let bucket = this.buckets.get(placement.key);
      if (!bucket) this.buckets.set(placement.key, (bucket = { unbounded: new Set(), ranged: new RangeIndex() }));
      if (placement.bounded) bucket.ranged.add(view, placement.lo, placement.hi);
      else bucket.unbounded.add(view);
    }
  }

  delete(view: V): void {
    const placement = this.placed.get(view);
    if (!placement) return;
    this.placed.delete(view);
    if (placement.kind === 'unfiltered') this.unfiltered.delete(view);
    else if (placement.kind === 'scanned') this.scanned.delete(view);
    else {
      const bucket = this.buckets.get(placement.key)!;
      if (placement.bounded) bucket.ranged.delete(view);
      else bucket.unbounded.delete(view);
      if (bucket.unbounded.size === 0 && bucket.ranged.size === 0) this.buckets.delete(placement.key);
    }
  }

  /**
   * Calls `visit` once for each view that sees `change`, with the change as that view
   * sees it (`inScope`); `previous` is the record's version before the change, when known.
   */
  match(change: RecordChange, previous: UpstreamRecord | undefined, visit: (view: V, seen: RecordChange) => void): void {
    for (const view of this.unfiltered) {
      this.meter.units += 1;
      visit(view, change);
    }
    if (this.placed.size === this.unfiltered.size) return;
    const now = change.record ? this.lookup(change.record) : [];
    let was: Set<V>;
    if (previous) was = new Set(this.lookup(previous));
    else if (change.kind === 'REMOVED') {
      // A removal of a record whose previous version is unknown is passed to every
      // filter (inScope: a client drops an id it does not hold). It does not happen
      // while the poller keeps each record it saw, but it costs the views if it does.
      was = new Set();
      for (const [view, placement] of this.placed) {
        this.meter.units += 1;
        if (placement.kind !== 'unfiltered') was.add(view);
      }
    } else was = new Set();
    let added: RecordChange | undefined;
    for (const view of now) {
      if (was.delete(view)) visit(view, change);
      else visit(view, change.kind === 'ADDED' ? change : (added ??= { ...change, kind: 'ADDED' }));
    }
    if (was.size === 0) return;
    const removed: RecordChange = { kind: 'REMOVED', id: change.id, fingerprint: REMOVED_FINGERPRINT };
    for (const view of was) visit(view, removed);
  }

  /** The filtered views whose filter matches `record`. */
  private lookup(record: UpstreamRecord): V[] {
    const found: V[] = [];
    for (const view of this.scanned) {
      this.meter.units += 1;
      if (this.resource.matches!(record, view.filter!)) found.push(view);
    }
    if (this.buckets.size === 0) return found;
    const shape = this.shape!;
    const values = this.equalFields.map((field) => shape.equal[field]!.of(record) ?? ANY);
    const number = shape.range ? shape.range.of(record) : null;
    // Each equality field probed with the record's value and with "any" (a record's
    // null matches only "any"): 2^fields keys.
    const combinations = 1 << values.length;
    for (let mask = 0; mask < combinations; mask++) {
      const key: Array<string | null> = [];
      let possible = true;
      for (let i = 0; i < values.length; i++) {
        const own = (mask & (1 << i)) !== 0;
        if (own && values[i] === ANY) possible = false;
        key.push(own ? values[i]! : ANY);
      }
      if (!possible) continue;
      this.meter.units += 1;
      const bucket = this.buckets.get(JSON.stringify(key));
      if (!bucket) continue;
      for (const view of bucket.unbounded) {
        this.meter.units += 1;
        found.push(view);
      }
      if (number !== null) bucket.ranged.stab(number, found, this.meter);
    }
    return found;
  }

  private placementOf(filter: ListFilter | undefined): Placement {
    if (filter === undefined) return { kind: 'unfiltered' };
    const shape = this.shape;
    if (!shape || !this.resource.matches) return { kind: 'scanned' };
    const key: Array<string | null> = this.equalFields.map(() => ANY);
    let lo = -Infinity;
    let hi = Infinity;
    let bounded = false;
    for (const [field, value] of Object.entries(filter)) {
      if (value === undefined || value === null) continue;
      const at = this.equalFields.indexOf(field);
      if (at !== -1 && typeof value === 'string') key[at] = value;
      else if (shape.range && (field === shape.range.from || field === shape.range.before) && typeof value === 'number' && Number.isFinite(value)) {
        bounded = true;
        if (field === shape.range.from) lo = value;
        else hi = value;
      }
      // A field, or a value, the shape does not describe: `matches` alone can say.
      else return { kind: 'scanned' };
    }
    return { kind: 'bucket', key: JSON.stringify(key), bounded, lo, hi };
  }
}

/**
 * Half-open ranges [lo, hi) of views, and the ones that hold a number. The ranges
 * sorted by `lo`, with a tree of the largest `hi` over them: the ranges with
 * `lo <= x` are a prefix (a binary search), and within it the tree leads only to the
 * ones with `hi > x`, so a lookup visits about log(n) nodes per range it reports
 * (a priority search over a segment tree). Built again, lazily, after a view comes or
 * goes: a list's views change far less often than its changes are matched, and a
 * build costs n log n for n ≤ the company's bound on filters.
 */
export class RangeIndex<V> {
  private readonly ranges = new Map<V, { readonly lo: number; readonly hi: number }>();
  private built = true;
  private los: number[] = [];
  private views: V[] = [];
  /** Largest `hi` of each node's ranges; leaves at `leaves + i`. */
  private largest = new Float64Array(2);
  private leaves = 1;

  get size(): number {
    return this.ranges.size;
  }

  add(view: V, lo: number, hi: number): void {
    this.ranges.set(view, { lo, hi });
    this.built = false;
  }

  delete(view: V): void {
    if (this.ranges.delete(view)) this.built = false;
  }

  /** Appends to `found` every view whose range holds `x`. */
  stab(x: number, found: V[], meter: WorkMeter): void {
    if (!this.built) this.build(meter);
    // A number that is not one (NaN) is below no bound and above none, as `matches`
    // compares: every range holds it.
    if (Number.isNaN(x)) {
      meter.units += this.views.length;
      found.push(...this.views);
      return;
    }
    let low = 0;
    let high = this.los.length;
    while (low < high) {
      meter.units += 1;
      const middle = (low + high) >>> 1;
      if (this.los[middle]! <= x) low = middle + 1;
      else high = middle;
    }
    const prefix = low;
    if (prefix === 0) return;
    const stack = [1, 0, this.leaves];
    while (stack.length > 0) {
      const right = stack.pop()!;
      const left = stack.pop()!;
      const node = stack.pop()!;
      meter.units += 1;
      if (left >= prefix || this.largest[node]! <= x) continue;
      if (node >= this.leaves) {
        found.push(this.views[node - this.leaves]!);
        continue;
      }
      const middle = (left + right) >>> 1;
      // Right child pushed first: ranges are reported in the order of their `lo`.
      stack.push(2 * node + 1, middle, right, 2 * node, left, middle);
    }
  }

  private build(meter: WorkMeter): void {
    const sorted = [...this.ranges].sort(([, a], [, b]) => a.lo - b.lo);
    const n = sorted.length;
    meter.units += n * Math.max(1, Math.ceil(Math.log2(n + 1)));
    this.los = sorted.map(([, range]) => range.lo);
    this.views = sorted.map(([view]) => view);
    let leaves = 1;
    while (leaves < n) leaves *= 2;
    this.leaves = leaves;
    this.largest = new Float64Array(2 * leaves).fill(-Infinity);
    for (let i = 0; i < n; i++) this.largest[leaves + i] = sorted[i]![1].hi;
    for (let node = leaves - 1; node >= 1; node--) this.largest[node] = Math.max(this.largest[2 * node]!, this.largest[2 * node + 1]!);
    this.built = true;
  }
}
