/**
 * The upstream-call budget of live polling on one replica (WFS_POLL_CALLS_PER_SECOND),
 * shared fairly between companies. Each poller declares what it costs (the page calls
 * of its last walk over its interval), and a company wants the sum of its pollers.
 * While all companies together want no more than the budget, nobody is stretched.
 * Past it, the budget is filled level by level (max-min fairness): every company that
 * wants less than an equal share of what is left gets all it wants, and the companies
 * above that level share the rest equally, their intervals stretched by
 * demand / level. So a company's subscriptions (or its long list) stretch only its
 * own intervals: a company that wants no more than budget / companies is never
 * stretched, whatever the others want.
 */
export class PollBudget {
  /** Company → poller → calls per second the poller wants at its configured interval. */
  private readonly demand = new Map<string, Map<object, number>>();
  private readonly totals = new Map<string, number>();
  /** The fair level (calls per second a company gets at most); Infinity while the budget holds. */
  private level = Infinity;
  private dirty = false;

  constructor(readonly callsPerSecond: number) {
    if (!(callsPerSecond > 0)) throw new RangeError('PollBudget: callsPerSecond must be positive');
  }

  /** `company`'s `poller` makes `callsPerPoll` page calls every `intervalMs` (before stretching). */
  note(company: string, poller: object, callsPerPoll: number, intervalMs: number): void {
    const wanted = Math.max(1, callsPerPoll) / (intervalMs / 1000);
    let pollers = this.demand.get(company);
    if (!pollers) this.demand.set(company, (pollers = new Map()));
    if (pollers.get(poller) === wanted) return;
    pollers.set(poller, wanted);
    this.update(company, pollers);
  }

  forget(company: string, poller: object): void {
    const pollers = this.demand.get(company);
    if (!pollers?.delete(poller)) return;
    if (pollers.size === 0) this.demand.delete(company);
    this.update(company, pollers);
  }

  /** By how much `company`'s intervals are stretched now: 1 while it wants no more than its fair level. */
  stretch(company: string): number {
    const wanted = this.totals.get(company) ?? 0;
    const level = this.fairLevel();
    return wanted > level ? wanted / level : 1;
  }

  /** The largest stretch of any company now (the gauge `wfs_live_poll_stretch_factor`). */
  largestStretch(): number {
    const level = this.fairLevel();
    let most = 0;
    for (const wanted of this.totals.values()) most = Math.max(most, wanted);
    return most > level ? most / level : 1;
  }

  private update(company: string, pollers: ReadonlyMap<object, number>): void {
    // Summed afresh (a company has a poller per list, a few), so no float drift.
    let total = 0;
    for (const wanted of pollers.values()) total += wanted;
    if (pollers.size === 0) this.totals.delete(company);
    else this.totals.set(company, total);
    this.dirty = true;
  }

  /** Water-filling over the companies' demands, recomputed only after one changed. */
  private fairLevel(): number {
    if (!this.dirty) return this.level;
    this.dirty = false;
    const demands = [...this.totals.values()].sort((a, b) => a - b);
    let left = this.callsPerSecond;
    this.level = Infinity;
    for (let i = 0; i < demands.length; i++) {
      const share = left / (demands.length - i);
      if (demands[i]! > share) {
        this.level = share;
        break;
      }
      left -= demands[i]!;
    }
    return this.level;
  }
}
