export interface BoundedLabelOptions {
  /** Arrivals a value needs before it may take a slot. Default 1 (the first arrival). */
  readonly admitAfter?: number;
  /** A slot unused for this long, in ms, goes to a newer value that needs one. Default 3 600 000. */
  readonly idleMs?: number;
  readonly now?: () => number;
}

/** Values counted towards `admitAfter` at once; past that, the least recently seen is forgotten. */
const MAX_CANDIDATES = 1_000;

/**
 * Keeps a label's values few: at most `max` values are reported as they are, every
 * other one as `other`. Prometheus keeps one series per label value, so a label fed
 * from requests (operation names, shard origins) must not grow with what clients or
 * tokens send.
 *
 * Slots go to values that keep arriving, not to whichever came first: a value takes a
 * free slot on its `admitAfter`-th arrival, so names sent once or twice (junk, typos,
 * a scan) never take one; and a slot unused for `idleMs` is handed to a newer value
 * that needs it, so early junk cannot hold the slots for good. (Prometheus keeps a
 * released value's series until restart: at most `max` new series per `idleMs`.)
 */
export class BoundedLabel {
  /** Value -> when it was last reported. */
  private readonly slots = new Map<string, number>();
  /** Values without a slot -> arrivals so far; in order of last arrival. */
  private readonly candidates = new Map<string, number>();
  private readonly admitAfter: number;
  private readonly idleMs: number;
  private readonly now: () => number;

  constructor(
    private readonly max: number,
    private readonly pattern: RegExp = /^[\w.:/[\]-]{1,100}$/,
    options: BoundedLabelOptions = {},
  ) {
    this.admitAfter = options.admitAfter ?? 1;
    this.idleMs = options.idleMs ?? 3_600_000;
    this.now = options.now ?? Date.now;
  }

  value(raw: string | null | undefined, missing = 'none'): string {
    if (raw === null || raw === undefined || raw === '') return missing;
    const now = this.now();
    if (this.slots.has(raw)) {
      this.slots.set(raw, now);
      return raw;
    }
    if (!this.pattern.test(raw)) return 'other';
    const arrivals = (this.candidates.get(raw) ?? 0) + 1;
    this.candidates.delete(raw);
    if (arrivals < this.admitAfter || (this.slots.size >= this.max && !this.releaseIdleSlot(now))) {
      if (this.candidates.size >= MAX_CANDIDATES) this.candidates.delete(this.candidates.keys().next().value!);
      this.candidates.set(raw, arrivals);
      return 'other';
    }
    this.slots.set(raw, now);
    return raw;
  }

  /** Values holding a slot now. */
  get size(): number {
    return this.slots.size;
  }

  private releaseIdleSlot(now: number): boolean {
    for (const [value, lastUsed] of this.slots) {
      if (now - lastUsed < this.idleMs) continue;
      this.slots.delete(value);
      return true;
    }
    return false;
  }
}
