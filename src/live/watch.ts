/**
 * The choice between watching a company's list and letting what is kept of it expire
 * (docs/caching.md, "Watched lists"), made on this replica per company and list from
 * what each costs the upstream, so that no load makes more upstream calls than
 * without it.
 *
 * Expiring costs a call for each page a query reads **again** after its kept copy
 * expired: a `miss` (EntityIndexes.listenToReads) for a page this replica read before,
 * within the last RECENT_PERIODS periods (a re-read). A first read costs its call
 * whether the list is watched or not, so a miss of a page not read before weighs
 * nothing: a person paging through a long list, or many filters each read once, start
 * no poller. Watching costs one walk of the whole list per poll interval (the poller's
 * page calls, known after its first walk; before it, the pages of 100 records that the
 * most the replica held of the list would fill) and saves the pages served only
 * because a poll confirmed them (`saved`). A confirmation serves what is kept for one
 * window from its walk, so with an interval longer than the window at most a window's
 * share of the re-reads is saved (the rest still expire between polls): the start
 * weighs that share alone. Both are counted over periods of the window or the
 * interval, whichever is longer:
 *
 * - a list starts being watched once the share of its re-reads within a period that a
 *   poll could save reaches START_FACTOR times what the walks of a period cost
 *   (clearly more than they would save), and stops at once if its first walk shows
 *   the walks cost more than that estimate;
 * - a watched list stops once a full period, begun a window after the start (pages
 *   read before it are paid for by their own read until then), saved less than the
 *   walks cost (STOP_FACTOR): reads dropped, or the polls cannot confirm what they read;
 * - a stop holds the list back for a period, doubled after each stop that came soon
 *   after its start (the estimate was wrong), up to MAX_BACKOFF_PERIODS: a load whose
 *   watching does not pay costs fewer and fewer walks.
 *
 * The pages read recently are remembered per list by a digest of their key (reference,
 * page size, filter: `keptKey`, whose reference may be 2 KB), 27 characters whatever
 * the key: at most RECENT_PAGES_PER_LIST per list (its least recently read go first)
 * and RECENT_PAGES_PER_REPLICA in all (past it, new pages are not remembered until old
 * ones age out), each for RECENT_PERIODS periods (a minute at the defaults), about
 * 150 bytes each: under 4 MB for the replica, counted against no other budget. The age
 * bound is also why a page re-read less often than that weighs nothing: over so long a
 * gap watching pays many walks for one call saved, and a change in between would have
 * dropped it anyway. What is forgotten can only hold a list back from being watched,
 * never start a watcher: memory short of a load's pages costs savings, never calls.
 *
 * A list that has subscribers is polled anyway; watching it as well costs nothing
 * more, and keeps it polled if they leave. The pollers are the hub's (hub.ts): one per
 * company and list whatever the reasons, under the replica's bound on watched lists.
 */
import { createHash } from 'node:crypto';
import type { PollerReason } from '../upstream/observer';
import type { AnyResource } from '../upstream/resources';
import { POLL_PAGE_SIZE } from './listReader';
import type { LiveEvents } from './metrics';

/** Re-reads within a period that a poll could save, as a multiple of a period's walk calls, that start watching. */
export const START_FACTOR = 2;
/** Pages saved within a period, as a multiple of a period's walk calls, below which watching stops. */
export const STOP_FACTOR = 1;
/** The longest a list is held back after stops, in periods. */
export const MAX_BACKOFF_PERIODS = 64;
/** How long a page read is remembered, in periods: a miss of it within that is a re-read. */
export const RECENT_PERIODS = 4;
/** Pages remembered per company and list. */
export const RECENT_PAGES_PER_LIST = 1_000;
/** Pages remembered by the replica, all lists together. */
export const RECENT_PAGES_PER_REPLICA = 20_000;

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
  /** Records this replica holds of a company's list (EntityIndexes.heldOf), for a walk's cost before the first walk says. */
  readonly recordsHeld?: (tenantId: string, list: string) => number;
  readonly events: Pick<LiveEvents, 'cacheWatching'>;
}

/** What is counted of one company's list. */
interface Demand {
  periodStart: number;
  /** Misses of pages read before (`recent`) within the period. */
  reReads: number;
  saved: number;
  /** The last full period: its start (undefined before one ended) and the pages it saved. */
  lastStart: number | undefined;
  lastSaved: number;
  /** Page calls of the list's last walk (undefined: not walked yet; `recordsSeen` says at least how many). */
  walkCalls: number | undefined;
  /** The most records the replica held of the list at a read, before a first walk. */
  recordsSeen: number;
  /** Watched since (ms), or undefined. */
  watchedSince: number | undefined;
  /** The re-reads that started the watching, held against the first walk's real cost. */
  startedOn: number;
  /** Digests of the pages read recently, to when each was last read; least recently read first. */
  recent: Map<string, number>;
  /** Periods a stop holds the list back. */
  backoff: number;
  notBefore: number;
}

export class Watching {
  private readonly lists = new Map<string, Demand>();
  private readonly periodMs: number;
  /** The share of a period's re-reads that polls could save (a window's from each walk). */
  private readonly saveable: number;
  private readonly horizonMs: number;
  /** Pages remembered in all lists' `recent`. */
  private remembered = 0;
  private lastSweep: number;

  constructor(
    private readonly hub: WatchTarget,
    private readonly options: WatchingOptions,
  ) {
    this.periodMs = Math.max(options.intervalMs, options.windowMs);
    this.saveable = Math.min(1, options.windowMs / options.intervalMs);
    this.horizonMs = RECENT_PERIODS * this.periodMs;
    this.lastSweep = options.now();
  }

  /** Lists with something counted now (tests, and the sweep's bound). */
  get tracked(): number {
    return this.lists.size;
  }

  /** Pages remembered now, all lists together (tests, and the replica's bound). */
  get rememberedPages(): number {
    return this.remembered;
  }

  /**
   * A query's page of `tenantId`'s `list` went upstream (`miss`, `page` its `keptKey`;
   * a miss naming no page is no re-read) or was served only because a poll confirmed
   * it (`saved`).
   */
  read(tenantId: string, list: string, outcome: 'miss' | 'saved', page?: string): void {
    const now = this.options.now();
    if (now - this.lastSweep >= this.periodMs) this.sweep(now);
    const key = `${tenantId}\n${list}`;
    let demand = this.lists.get(key);
    if (!demand) this.lists.set(key, (demand = fresh(now)));
    this.roll(demand, now);
    if (demand.walkCalls === undefined && this.options.recordsHeld) demand.recordsSeen = Math.max(demand.recordsSeen, this.options.recordsHeld(tenantId, list));
    if (outcome === 'saved') demand.saved += 1;
    else if (page !== undefined && this.readAgain(demand, page, now)) demand.reReads += 1;
    if (demand.watchedSince === undefined) this.maybeStart(tenantId, list, demand, now);
    else this.maybeStop(tenantId, list, demand, now);
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

  /**
   * What a period of walks costs: the last walk's calls (at least 1) per interval, over
   * a period. Before a first walk, the pages of POLL_PAGE_SIZE records that the most
   * records the replica was seen holding of the list would fill, so that a list
   * whose queries read all of it (2 pages of 100, say) is not started on a guess of 1
   * call. Kept copies of one record (several filters or page sizes) count each: the
   * guess errs high, which can only hold a list back until its first walk.
   */
  private cost(demand: Demand): number {
    const calls = demand.walkCalls ?? Math.ceil(demand.recordsSeen / POLL_PAGE_SIZE);
    return Math.max(1, calls) * (this.periodMs / this.options.intervalMs);
  }

  /** Whether watching on `reReads` is worth its walks: what polls could save of them against START_FACTOR walks. */
  private pays(demand: Demand, reReads: number): boolean {
    return reReads * this.saveable >= START_FACTOR * this.cost(demand);
  }

  /**
   * Whether the page `key` was read within the horizon (a re-read); remembers it as
   * read now, under the list's and the replica's bounds.
   */
  private readAgain(demand: Demand, key: string, now: number): boolean {
    this.forgetOld(demand, now);
    const digest = createHash('sha256').update(key).digest('base64').slice(0, 27);
    const known = demand.recent.delete(digest);
    if (known) this.remembered -= 1;
    else if (demand.recent.size >= RECENT_PAGES_PER_LIST) this.forget(demand, demand.recent.keys().next().value!);
    if (this.remembered < RECENT_PAGES_PER_REPLICA) {
      demand.recent.set(digest, now);
      this.remembered += 1;
    }
    return known;
  }

  /** Forgets `demand`'s pages read longer ago than the horizon (the least recently read come first). */
  private forgetOld(demand: Demand, now: number): void {
    for (const [digest, at] of demand.recent) {
      if (now - at < this.horizonMs) return;
      this.forget(demand, digest);
    }
  }

  private forget(demand: Demand, digest: string): void {
    if (demand.recent.delete(digest)) this.remembered -= 1;
  }

  private maybeStart(tenantId: string, list: string, demand: Demand, now: number): void {
    if (now < demand.notBefore || !this.pays(demand, demand.reReads)) return;
    const resource = this.options.resourceNamed(list);
    if (!resource) return;
    if (!this.hub.watch(tenantId, resource)) {
      this.options.events.cacheWatching('refused');
      demand.notBefore = now + this.periodMs;
      return;
    }
    this.options.events.cacheWatching('started');
    demand.watchedSince = now;
    demand.startedOn = demand.reReads;
  }

  private maybeStop(tenantId: string, list: string, demand: Demand, now: number): void {
    const since = demand.watchedSince!;
    const reason = this.hub.reasonFor(tenantId, list);
    if (reason !== 'watched' && reason !== 'both') {
      // The poller ended (its company's grant was withdrawn, say): held back as after a stop.
      this.stopped(demand, now, true);
      return;
    }
    const wrongEstimate = demand.walkCalls !== undefined && !this.pays(demand, demand.startedOn);
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
    demand.reReads = 0;
    demand.saved = 0;
  }

  /** Forgets the pages read before the horizon, and the lists neither watched nor read for two periods, nor held back, nor remembering a page. */
  private sweep(now: number): void {
    this.lastSweep = now;
    for (const [key, demand] of this.lists) {
      this.forgetOld(demand, now);
      if (demand.watchedSince === undefined && now - demand.periodStart >= 2 * this.periodMs && now >= demand.notBefore && demand.recent.size === 0) this.lists.delete(key);
    }
  }
}

function fresh(now: number): Demand {
  return { periodStart: now, reReads: 0, saved: 0, lastStart: undefined, lastSaved: 0, walkCalls: undefined, recordsSeen: 0, watchedSince: undefined, startedOn: 0, recent: new Map(), backoff: 1, notBefore: 0 };
}
