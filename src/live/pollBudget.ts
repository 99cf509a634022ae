/**
 * The global upstream-call budget of live polling on one replica
 * (WFS_POLL_CALLS_PER_SECOND). Each poller declares what it costs (the page calls of
 * its last walk over its interval); when all of them together want more than the
 * budget, every interval is stretched by the same factor: fair across companies (a
 * company with a long list pays for its length, not another company), and the
 * upstream sees at most the budget instead of a burst.
 */
export class PollBudget {
  /** Calls per second each poller wants at its configured interval. */
  private readonly demand = new Map<object, number>();
  private total = 0;

  constructor(readonly callsPerSecond: number) {
    if (!(callsPerSecond > 0)) throw new RangeError('PollBudget: callsPerSecond must be positive');
  }

  /** `poller` makes `callsPerPoll` page calls every `intervalMs` (before stretching). */
  note(poller: object, callsPerPoll: number, intervalMs: number): void {
    const wanted = Math.max(1, callsPerPoll) / (intervalMs / 1000);
    this.total += wanted - (this.demand.get(poller) ?? 0);
    this.demand.set(poller, wanted);
  }

  forget(poller: object): void {
    this.total -= this.demand.get(poller) ?? 0;
    this.demand.delete(poller);
    if (this.demand.size === 0) this.total = 0; // no drift from float sums
  }

  /** By how much every interval is stretched now: 1 while the budget holds. */
  stretch(): number {
    return Math.max(1, this.total / this.callsPerSecond);
  }
}
