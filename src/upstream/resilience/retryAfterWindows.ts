import { NUMERIC_SETTINGS } from '../../config';

/** Whose window it is: a tenant's (429) or a shard's (503). */
export type WindowScope = 'tenant' | 'shard';

export interface RetryAfterWindowsOptions {
  /** The longest shard (503) window we keep, in seconds, whatever the shard asks. Default: its value in src/config/. */
  readonly shardMaxSeconds?: number;
  /** The longest tenant (429) window we keep, in seconds. Default: its value in src/config/. */
  readonly tenantMaxSeconds?: number;
  /** Epoch ms. Default Date.now. */
  readonly now?: () => number;
}

/** What a caller may do now about one tenant or shard. */
export type WindowCheck =
  /** No window: call. */
  | { readonly kind: 'none' }
  /** A window in force: wait `remainingMs` or fail fast with it. */
  | { readonly kind: 'wait'; readonly remainingMs: number }
  /**
   * A capped window has ended and this caller sends the one probe; it must report
   * the probe's end with `probeDone`, whatever the outcome.
   */
  | { readonly kind: 'probe'; readonly probe: object }
  /** Another caller's probe is under way: fail fast (the probe decides for everyone). */
  | { readonly kind: 'probing' };

interface Window {
  until: number;
  /** The upstream asked for longer than we keep: when the window ends, one probe decides. */
  capped: boolean;
  probing: boolean;
}

/** Above this many windows, the ended ones are swept out when a new one opens. */
const SWEEP_FROM = 1_024;
/** Never more windows than this (a hostile token endpoint can announce many shard origins). */
const MAX_WINDOWS = 10_000;

/**
 * Retry-After windows in force. A 429 with `Retry-After` opens a window for that
 * tenant, a 503 with `Retry-After` one for that shard origin; until it ends, no call
 * of that tenant or shard is sent: a client that keeps knocking during a window it
 * was given is the client that gets its credentials blocked.
 *
 * Windows are capped (a shard's at `shardMaxSeconds`, a tenant's at
 * `tenantMaxSeconds`): one 503 with `Retry-After: 31536000` must not close a shard on
 * this replica until it restarts. When a capped window ends, one probe call goes
 * through (like a breaker's half-open state) while others still fail fast; its
 * answer decides: another 503 or 429 opens a new window, anything else ends it.
 * Ended windows are swept, so the map holds only live ones (and never more than
 * MAX_WINDOWS).
 */
export class RetryAfterWindows {
  private readonly windows = new Map<string, Window>();
  private readonly now: () => number;
  private readonly maxSeconds: Record<WindowScope, number>;

  constructor(options: RetryAfterWindowsOptions = {}) {
    this.now = options.now ?? Date.now;
    this.maxSeconds = {
      shard: options.shardMaxSeconds ?? NUMERIC_SETTINGS.WFS_SHARD_RETRY_AFTER_MAX_S.default,
      tenant: options.tenantMaxSeconds ?? NUMERIC_SETTINGS.WFS_TENANT_RETRY_AFTER_MAX_S.default,
    };
  }

  /** Windows kept now (for tests and diagnostics). */
  get size(): number {
    return this.windows.size;
  }

  /** Opens (or lengthens) a window; returns the seconds we keep it, which is what clients are told. */
  open(scope: WindowScope, key: string, seconds: number): number {
    const kept = Math.min(seconds, this.maxSeconds[scope]);
    const id = `${scope}\u0000${key}`;
    const end = this.now() + kept * 1000;
    const current = this.windows.get(id);
    if (current && !current.probing && current.until >= end) return Math.ceil((current.until - this.now()) / 1000);
    if (!current) this.sweep();
    this.windows.delete(id); // re-inserted last: the map stays in order of opening
    this.windows.set(id, { until: end, capped: seconds > kept, probing: false });
    return kept;
  }

  /** Whether a call for this tenant or shard may go now. */
  check(scope: WindowScope, key: string): WindowCheck {
    const id = `${scope}\u0000${key}`;
    const window = this.windows.get(id);
    if (!window) return { kind: 'none' };
    const left = window.until - this.now();
    if (left > 0) return { kind: 'wait', remainingMs: left };
    if (!window.capped) {
      this.windows.delete(id);
      return { kind: 'none' };
    }
    if (window.probing) return { kind: 'probing' };
    window.probing = true;
    return { kind: 'probe', probe: window };
  }

  /**
   * The probe is over. `answered`: the upstream answered it, and the window ends
   * unless that answer opened a new one; otherwise (not sent, cancelled) the next
   * caller probes instead.
   */
  probeDone(scope: WindowScope, key: string, probe: object, answered: boolean): void {
    const id = `${scope}\u0000${key}`;
    const window = this.windows.get(id);
    if (window !== probe) return;
    if (answered) this.windows.delete(id);
    else window.probing = false;
  }

  private sweep(): void {
    if (this.windows.size < SWEEP_FROM) return;
    const now = this.now();
    for (const [id, window] of this.windows) {
      if (window.until <= now && !window.probing) this.windows.delete(id);
    }
    // Still full of live windows: drop the oldest (its scope is called again, and a 503 reopens it).
    for (const id of this.windows.keys()) {
      if (this.windows.size < MAX_WINDOWS) break;
      this.windows.delete(id);
    }
  }
}
