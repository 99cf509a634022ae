/** Whose window it is: a tenant's (429) or a shard's (503). */
export type WindowScope = 'tenant' | 'shard';

/**
 * Retry-After windows in force. A 429 with `Retry-After` opens a window for that
 * tenant, a 503 with `Retry-After` one for that shard origin; until it ends, no call
 * of that tenant or shard is sent: a client that keeps knocking during a window it
 * was given is the client that gets its credentials blocked. Expired windows are
 * dropped when read, so the map holds only live ones.
 */
export class RetryAfterWindows {
  private readonly until = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  open(scope: WindowScope, key: string, seconds: number): void {
    const id = `${scope}\u0000${key}`;
    const end = this.now() + seconds * 1000;
    if (end > (this.until.get(id) ?? 0)) this.until.set(id, end);
  }

  /** Ms left in the window, 0 when none is in force. */
  remainingMs(scope: WindowScope, key: string): number {
    const id = `${scope}\u0000${key}`;
    const end = this.until.get(id);
    if (end === undefined) return 0;
    const left = end - this.now();
    if (left <= 0) {
      this.until.delete(id);
      return 0;
    }
    return left;
  }
}
