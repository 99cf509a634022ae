/**
 * The choice between watching a company's list and letting what is kept of it expire
 * (docs/caching.md, "Watched lists"), made on this replica per company and list from
 * what each costs the upstream, so that no load makes more upstream calls than
 * without it.
 *
 * Expiring costs a call for each page a query reads again after the window: the
 * `miss`es the reading side reports (EntityIndexes.listenToReads). Watching costs one
 * walk of the whole list per poll interval (the poller's page calls, known after its
 * first walk) and saves the pages served only because a poll confirmed them (`saved`).
 * Both are counted over periods of the window or the interval, whichever is longer:
 *
 * - a list starts being watched once its misses within a period reach START_FACTOR
 *   times what the walks of a period cost (clearly more than they would save), and
 *   stops at once if its first walk shows the walks cost more than that estimate;
 * - a watched list stops once a full period, begun a window after the start (pages
 *   read before it are paid for by their own read until then), saved less than the
 *   walks cost (STOP_FACTOR): reads dropped, or the polls cannot confirm what they read;
 * - a stop holds the list back for a period, doubled after each stop that came soon
 *   after its start (the estimate was wrong), up to MAX_BACKOFF_PERIODS: a load whose
 *   watching does not pay costs fewer and fewer walks.
 *
 * A list read once in a while (sparse reads: each page once per 30 s, say) never
 * reaches the start: its misses per period stay under twice one walk. A list that has
 * subscribers is polled anyway; watching it as well costs nothing more, and keeps it
 * polled if they leave. The pollers are the hub's (hub.ts): one per company and list
 * whatever the reasons, under the replica's bound on watched lists.
 */
import type { PollerReason } from '../upstream/observer';
import type { AnyResource } from '../upstream/resources';
import type { LiveEvents } from './metrics';

/** Misses within a period, as a multiple of a period's walk calls, that start watching. */
export const START_FACTOR = 2;
/** Pages saved within a period, as a multiple of a period's walk calls, below which watching stops. */
export const STOP_FACTOR = 1;
/** The longest a list is held back after stops, in periods. */
export const MAX_BACKOFF_PERIODS = 64;

/** What the choice starts and stops: the live hub. */
export interface WatchTarget {
  watch(tenantId: string, resource: AnyResource): boolean;
  unwatch(tenantId: string, list: string): void;
  reasonFor(tenantId: string, list: string): PollerReason | undefined;
}

export interface WatchingOptions {
  /** The poll interval, in ms (before jitter and stretching). */
  readonly intervalMs: number;
  /** The freshness window, in ms (WFS_FRESHNESS_SECONDS). */
  readonly windowMs: number;
  /** The entity indexes' clock. */
  readonly now: () => number;
  readonly resourceNamed: (list: string) => AnyResource | undefined;
  readonly events: Pick<LiveEvents, 'cacheWatching'>;
}

/** What is counted of one company's list. */
interface Demand {
  periodStart: number;
  misses: number;
  saved: number;
  /** The last full period: its start (undefined before one ended) and the pages it saved. */
  lastStart: number | undefined;
  lastSaved: number;
  /** Page calls of the list's last walk (undefined: not walked yet; 1 is assumed). */
  walkCalls: number | undefined;
  /** Watched since (ms), or undefined. */
  watchedSince: number | undefined;
  /** The misses that started the watching, held against the first walk's real cost. */
  startedOn: number;
  /** Periods a stop holds the list back. */
  backoff: number;
  notBefore: number;
}

export class Watching {
  private readonly lists = new Map<string, Demand>();
  private readonly periodMs: number;
  private lastSweep: number;

  constructor(
    private readonly hub: WatchTarget,
    private readonly options: WatchingOptions,
  ) {
    this.periodMs = Math.max(options.intervalMs, options.windowMs);
    this.lastSweep = options.now();
  }

  /** Lists with something counted now (tests, and the sweep's bound). */
  get tracked(): number {
    return this.lists.size;
  }

  /** A query's page of `tenantId`'s `list` went upstream (`miss`) or was served only because a poll confirmed it (`saved`). */
  read(tenantId: string, list: string, outcome: 'miss' | 'saved'): void {
    const now = this.options.now();
    const key = `${tenantId}\n${list}`;
    let demand = this.lists.get(key);
    if (!demand) this.lists.set(key, (demand = fresh(now)));
    this.roll(demand, now);
    if (outcome === 'miss') demand.misses += 1;
    else demand.saved += 1;
    if (demand.watchedSince === undefined) this.maybeStart(tenantId, list, demand, now);
    else this.maybeStop(tenantId, list, demand, now);
    if (now - this.lastSweep >= this.periodMs) this.sweep(now);
  }

  /** A poller of `tenantId`'s `list` took its turn (`calls`: its walk's page calls; undefined: it did not walk). */
  ticked(tenantId: string, list: string, calls: number | undefined): void {
    const demand = this.lists.get(`${tenantId}\n${list}`);
    if (!demand) return;
    if (calls !== undefined) demand.walkCalls = calls;
    const now = this.options.now();
    this.roll(demand, now);
    if (demand.watchedSince !== undefined) this.maybeStop(tenantId, list, demand, now);
  }

  /** What a period of walks costs: the last walk's calls (at least 1) per interval, over a period. */
  private cost(demand: Demand): number {
    return Math.max(1, demand.walkCalls ?? 1) * (this.periodMs / this.options.intervalMs);
  }

  private maybeStart(tenantId: string, list: string, demand: Demand, now: number): void {
    if (now < demand.notBefore || demand.misses < START_FACTOR * this.cost(demand)) return;
    const resource = this.options.resourceNamed(list);
    if (!resource) return;
    if (!this.hub.watch(tenantId, resource)) {
      this.options.events.cacheWatching('refused');
      demand.notBefore = now + this.periodMs;
      return;
    }
    this.options.events.cacheWatching('started');
    demand.watchedSince = now;
    demand.startedOn = demand.misses;
  }

  private maybeStop(tenantId: string, list: string, demand: Demand, now: number): void {
    const since = demand.watchedSince!;
    const reason = this.hub.reasonFor(tenantId, list);
    if (reason !== 'watched' && reason !== 'both') {
      // The poller ended (its company's grant was withdrawn, say): held back as after a stop.
      this.stopped(demand, now, true);
      return;
    }
    const wrongEstimate = demand.walkCalls !== undefined && demand.startedOn < START_FACTOR * this.cost(demand);
    const measured = demand.lastStart !== undefined && demand.lastStart >= since + this.options.windowMs;
    if (!wrongEstimate && !(measured && demand.lastSaved < STOP_FACTOR * this.cost(demand))) return;
    this.hub.unwatch(tenantId, list);
    this.stopped(demand, now, wrongEstimate || now - since < 4 * this.periodMs);
  }

  private stopped(demand: Demand, now: number, soon: boolean): void {
    this.options.events.cacheWatching('stopped');
    demand.watchedSince = undefined;
    demand.backoff = soon ? Math.min(MAX_BACKOFF_PERIODS, demand.backoff * 2) : 1;
    demand.notBefore = now + demand.backoff * this.periodMs;
  }

  /** Ends the period once it is over: its counts become the last period's (nothing, if a whole period passed unseen). */
  private roll(demand: Demand, now: number): void {
    if (now < demand.periodStart + this.periodMs) return;
    const skipped = now >= demand.periodStart + 2 * this.periodMs;
    demand.lastStart = skipped ? now - this.periodMs : demand.periodStart;
    demand.lastSaved = skipped ? 0 : demand.saved;
    demand.periodStart = now;
    demand.misses = 0;
    demand.saved = 0;
  }

  /** Forgets the lists neither watched nor read for two periods, nor held back. */
  private sweep(now: number): void {
    this.lastSweep = now;
    for (const [key, demand] of this.lists) {
      if (demand.watchedSince === undefined && now - demand.periodStart >= 2 * this.periodMs && now >= demand.notBefore) this.lists.delete(key);
    }
  }
}

function fresh(now: number): Demand {
  return { periodStart: now, misses: 0, saved: 0, lastStart: undefined, lastSaved: 0, walkCalls: undefined, watchedSince: undefined, startedOn: 0, backoff: 1, notBefore: 0 };
}
