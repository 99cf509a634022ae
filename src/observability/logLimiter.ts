/**
 * A per-key rate limit for log lines: each key (a shard origin, list and cause) may
 * write `burst` lines per window; the rest are counted, and `drain()` hands back the
 * counts so a timer can write one summary line per key and window. A shard failing a
 * thousand times a second thus writes a few lines and a periodic count.
 */
export interface LogLimiterOptions {
  /** Lines per key and window. Default 5. */
  readonly burst?: number;
  /** Window in ms. Default 10 000. */
  readonly windowMs?: number;
  /** Keys tracked at once (besides `other`); past that, and with none idle to forget, new keys share one `other` key. Default 1 000. */
  readonly maxKeys?: number;
  readonly now?: () => number;
}

interface KeyState {
  windowStart: number;
  written: number;
  suppressed: number;
}

export class LogLimiter<Detail = unknown> {
  readonly windowMs: number;
  private readonly burst: number;
  private readonly maxKeys: number;
  private readonly now: () => number;
  private readonly keys = new Map<string, KeyState & { detail: Detail }>();
  private nextSweepAt = 0;

  constructor(options: LogLimiterOptions = {}) {
    this.burst = options.burst ?? 5;
    this.windowMs = options.windowMs ?? 10_000;
    this.maxKeys = options.maxKeys ?? 1_000;
    this.now = options.now ?? Date.now;
  }

  /** Whether a line for `key` may be written now; `detail` is kept for the summary of suppressed lines. */
  allow(key: string, detail: Detail): boolean {
    const now = this.now();
    let state = this.keys.get(key);
    if (!state) {
      // Full: forget keys idle for two windows with nothing left to report (one sweep per
      // window at most, so a flood of new keys does not scan the table each time), before sharing `other`.
      if (this.keys.size >= this.maxKeys && now >= this.nextSweepAt) this.forgetIdle(now);
      if (this.keys.size >= this.maxKeys) key = 'other';
      state = this.keys.get(key) ?? { windowStart: now, written: 0, suppressed: 0, detail };
      this.keys.set(key, state);
    }
    if (now - state.windowStart >= this.windowMs) {
      // A new window; a count left over from the last one is still reported by drain().
      state.windowStart = now;
      state.written = 0;
    }
    if (state.written < this.burst) {
      state.written += 1;
      return true;
    }
    state.suppressed += 1;
    state.detail = detail;
    return false;
  }

  /** The keys with suppressed lines since the last drain, and how many; resets those counts and forgets idle keys. */
  drain(): Array<{ key: string; suppressed: number; detail: Detail }> {
    const now = this.now();
    const out: Array<{ key: string; suppressed: number; detail: Detail }> = [];
    for (const [key, state] of this.keys) {
      if (state.suppressed > 0) out.push({ key, suppressed: state.suppressed, detail: state.detail });
      state.suppressed = 0;
    }
    this.forgetIdle(now);
    return out;
  }

  /** Keys tracked now (at most `maxKeys` and `other`). */
  get size(): number {
    return this.keys.size;
  }

  private forgetIdle(now: number): void {
    this.nextSweepAt = now + this.windowMs;
    for (const [key, state] of this.keys) {
      if (state.suppressed === 0 && now - state.windowStart >= 2 * this.windowMs) this.keys.delete(key);
    }
  }
}
