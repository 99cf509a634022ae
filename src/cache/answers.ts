import { hash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { GraphQLContext } from '../graphql/data/context';
import { NO_OBSERVER, type Observer } from '../upstream/observer';
import { answerStillCurrent, type AnswerSources } from '../upstream/reading/tenantReader';
import { UNIT_BYTES, type CacheBudget } from './budget';
import { headersOf, maxAgeAt } from './policy';

/** What an entry costs beyond its key and body: the entry, its headers, its sources, the store's slot. */
const ENTRY_OVERHEAD_BYTES = 400;

/** An answer larger than this share of the store is not kept: one answer must not empty it. */
const LARGEST_SHARE = 1 / 32;

/** How often, in ms, answers past their freshness end are let go (their memory, and their charge against the budget). */
const SWEEP_EVERY_MS = 5_000;

/**
 * Requests asked once within the window that are remembered (by a digest of their key)
 * so that a second asking keeps its answer: about 150 bytes each, 3 MB at most.
 */
export const MAX_REMEMBERED = 20_000;

/** An answer kept whole. */
interface Entry {
  /** The JSON body as it was written, ready to write again. */
  readonly body: Buffer;
  /**
   * The body the plain path writes in the last second of the answer's freshness, when
   * `max-age` would be 0 (the decision's `lastSecond`): the same data, untagged.
   * Undefined: that second executes.
   */
  readonly lastSecond: Buffer | undefined;
  /** The response headers but the decision's (`cache-control`, `vary`) and `content-length`. */
  readonly headers: Readonly<Record<string, string>>;
  /** The decision's `Vary`. */
  readonly vary: string | undefined;
  /** The answer's freshness end (ms, the indexes' clock): the instant its `max-age` was counted from. */
  readonly until: number;
  /** The company's indexes it was read through, each in its epoch then, and the lists' resources (for the grant). */
  readonly sources: AnswerSources;
  /** The operation name the request resolved to (its metrics and debug line). */
  readonly operationName: string | null;
  /** What it counts against the budget, in record units. */
  readonly units: number;
  readonly bytes: number;
}

/** What a hit writes. */
export interface WholeHit {
  readonly body: Buffer;
  readonly headers: Record<string, string>;
  readonly operationName: string | null;
}

export interface WholeAnswersOptions {
  /** WFS_FRESHNESS_SECONDS (> 0: the store is made only then). */
  readonly freshnessSeconds: number;
  /** The clock the entity indexes run on (the answers' freshness ends are on it). */
  readonly now: () => number;
  /** Its share of the replica's memory budget, and where it is charged (budget.ts). */
  readonly budget: CacheBudget;
  /** Where hits and misses are counted (`wfs_cache_requests_total{cache="whole_answers"}`). */
  readonly observer?: Pick<Observer, 'cacheLookup'>;
  /** How often expired answers are let go, in ms; 0: never by a timer (`sweep()`). */
  readonly sweepEveryMs?: number;
  /**
   * How many times a request must be asked within the window before its answer is kept
   * (nginx's `proxy_cache_min_uses`): 2 by default, so an answer asked once is never
   * copied, kept and charged to the budget for nothing (the bench's sparse reads).
   */
  readonly minUses?: number;
  /** How many requests asked too few times yet are remembered (MAX_REMEMBERED). */
  readonly remembered?: number;
}

/**
 * Answers kept whole (docs/caching.md, "Whole answers"): a query's JSON answer, per
 * company and request, served again before Apollo Server runs, until the answer's own
 * freshness end, so a read repeated within the window costs neither execution nor
 * Apollo's pipeline. The store carries out the cache policy's decision (policy.ts): it
 * keeps what the decision says may be kept whole, until when it says, and a hit writes
 * the headers of the same decision with what is left of it.
 *
 * Asked for: the second time a request is asked within the window (`minUses`: an answer
 * asked once is not worth its copy), or the first time after its kept answer ended (a
 * request asked that often is asked again). Keyed by the policy's `requestKey` (the
 * company the identity resolves to, the content type, the accept header, the body's
 * text). The grant is not in the key: it is the company's, and a hit checks it now,
 * list by list, as a kept page is checked (tenantReader.ts, `stillServes`).
 *
 * Never older than what the other ways show: a hit is served only while every index the
 * answer read from has forgotten nothing since (keptPages.ts, `stillCurrent`), so a
 * change a poll saw here or on another replica, a change a page read showed, an
 * eviction, or an index's expiry each end it, at once, as they end the kept pages and
 * records it was made of. In its last second, when `max-age` would be 0, it answers as
 * the plain path then does from those pages and records: `no-store`, untagged. Its
 * cursors are the ones it was written with (each answer seals its own with a fresh
 * nonce; a kept one repeats them, as a gateway's cache does).
 *
 * Bounded (lru-cache): its share of the memory budget in bytes, charged to it, least
 * recently used first out, each answer living until its freshness end (`ttl` on the
 * indexes' clock), those past it let go by a sweep.
 */
export class WholeAnswers {
  private readonly entries: LRUCache<string, Entry>;
  /** Requests asked within the window but not yet often enough to be kept: a digest of the key, to its count. */
  private readonly asked: LRUCache<string, number>;
  private readonly observer: Pick<Observer, 'cacheLookup'>;
  private readonly timer: NodeJS.Timeout | undefined;
  private readonly largest: number;

  constructor(private readonly options: WholeAnswersOptions) {
    this.observer = options.observer ?? NO_OBSERVER;
    const { budget, now } = options;
    // The indexes' clock, read on every check (`ttlResolution` 0): answers end when their indexes do.
    const perf = { now };
    this.largest = budget.maxBytes * LARGEST_SHARE;
    this.entries = new LRUCache<string, Entry>({
      maxSize: Math.max(1, budget.maxBytes),
      sizeCalculation: (entry) => entry.bytes,
      ttl: options.freshnessSeconds * 1000,
      ttlResolution: 0,
      perf,
      dispose: (entry) => budget.charge(-entry.units),
    });
    this.asked = new LRUCache<string, number>({ max: options.remembered ?? MAX_REMEMBERED, ttl: options.freshnessSeconds * 1000, ttlResolution: 0, perf });
    const every = options.sweepEveryMs ?? SWEEP_EVERY_MS;
    if (every > 0) {
      this.timer = setInterval(() => this.sweep(), every);
      this.timer.unref();
    }
  }

  /** Answers kept now. */
  get size(): number {
    return this.entries.size;
  }

  /** Bytes they hold, as counted. */
  get heldBytes(): number {
    return this.entries.calculatedSize;
  }

  /**
   * The answer kept for this request, if one is and still serves; otherwise undefined,
   * and the request, if its answer should be kept, is asked for it (its ticket's
   * `keepAs`: the policy then decides whether it may be, and `keep` keeps it).
   * `key`: the request's `requestKey` (policy.ts), which resolved its identity.
   */
  async lookup(context: GraphQLContext, key: string): Promise<WholeHit | undefined> {
    const tenant = context.knownTenant();
    if (!tenant) return undefined;
    // A stale entry is still returned (and let go): a request whose answer was kept is asked often.
    const entry = this.entries.get(key, { allowStale: true });
    const hit = entry && this.servesAs(entry) && (await tenant.reader.stillServes(entry.sources)) ? this.hit(entry) : undefined;
    if (!entry || !hit) {
      if (entry && this.entries.peek(key, { allowStale: true }) === entry) this.entries.delete(key);
      this.observer.cacheLookup('whole_answers', 0, 1);
      // A request whose answer was kept (asked often enough) and has ended, by its
      // freshness end or by a change, leaves its next answer at once: it is not asked
      // once more first, which would cost an execution per window for nothing.
      if ((entry || this.askedEnough(key)) && context.cache) context.cache.keepAs = key;
      return undefined;
    }
    this.observer.cacheLookup('whole_answers', 1, 0);
    return hit;
  }

  /**
   * What the entry answers now (`servesAs`, checked again after the lookup's await):
   * itself with the decision's headers for what is left of its freshness, or, in its
   * last second, what the plain path answers then from the same kept pages and
   * records: the same data, `no-store`, without cache tags. Undefined once it cannot.
   */
  private hit(entry: Entry): WholeHit | undefined {
    const as = this.servesAs(entry);
    const body = as === 'kept' ? entry.body : as === 'plain' ? entry.lastSecond : undefined;
    if (!body) return undefined;
    const maxAge = as === 'kept' ? maxAgeAt(entry.until, this.options.now(), this.options.freshnessSeconds) : 0;
    const decided = headersOf(entry.vary === undefined ? { maxAge } : { maxAge, vary: entry.vary });
    return { body, headers: { ...entry.headers, ...decided, 'content-length': String(body.length) }, operationName: entry.operationName };
  }

  /**
   * A request's response is written: kept if the store asked for it (`lookup`), the
   * policy's decision says it may be kept whole, it is a 200 in one piece, and what it
   * was made of is still current. `headers`: the response's, as written.
   */
  keep(context: GraphQLContext, status: number | undefined, headers: Readonly<Record<string, string>>, text: string): void {
    const key = context.cache?.keepAs;
    const made = context.cache?.decision?.keep;
    if (key === undefined || !made || (status ?? 200) !== 200) return;
    const now = this.options.now();
    if (made.until - now < 1_000 || !answerStillCurrent(made.sources)) return;
    const body = Buffer.from(text);
    const last = made.lastSecond();
    const lastSecond = last === undefined ? undefined : Buffer.from(last);
    const bytes = body.length + Buffer.byteLength(key) + (lastSecond?.length ?? 0) + ENTRY_OVERHEAD_BYTES;
    if (bytes > this.largest) return;
    const kept: Record<string, string> = {};
    for (const name in headers) if (name !== 'cache-control' && name !== 'content-length' && name !== 'vary') kept[name] = headers[name]!;
    const vary = context.cache?.decision?.vary;
    const entry: Entry = { body, lastSecond, headers: kept, vary, until: made.until, sources: made.sources, operationName: made.operationName, units: Math.ceil(bytes / UNIT_BYTES), bytes };
    this.entries.set(key, entry, { ttl: made.until - now });
    // Counted last: the charge may evict indexes (this answer's among them, which then ends it).
    this.options.budget.charge(entry.units);
  }

  /**
   * How an entry can answer now: as kept (a second or more of its freshness left), as
   * the plain path's answer of its last second (`plain`, when that body is known and the
   * plain path would find less than a second left too), or not at all.
   */
  private servesAs(entry: Entry): 'kept' | 'plain' | undefined {
    const now = this.options.now();
    const left = entry.until - now;
    if (left >= 1_000) return 'kept';
    return left > 0 && entry.lastSecond !== undefined && lastSecond(entry.sources, now) ? 'plain' : undefined;
  }

  /**
   * Whether a request that missed has now been asked `minUses` times within the window
   * (counting this one), so that its answer may be kept. Remembered by a digest (the key
   * holds the whole body), at most `remembered` of them, the least recent forgotten first.
   */
  private askedEnough(key: string): boolean {
    const minUses = this.options.minUses ?? 2;
    if (minUses <= 1) return true;
    const digest = hash('sha1', key, 'base64');
    const uses = (this.asked.get(digest) ?? 0) + 1;
    if (uses >= minUses) {
      this.asked.delete(digest);
      return true;
    }
    // Each asking starts the window again, as the first did.
    this.asked.set(digest, uses);
    return false;
  }

  /** Lets go of every answer past its freshness end, and every request asked too long ago to count (the timer calls this). */
  sweep(): void {
    this.entries.purgeStale();
    this.asked.purgeStale();
  }

  /** Stops the sweep and lets go of everything. */
  close(): void {
    clearInterval(this.timer);
    this.entries.clear();
    this.asked.clear();
  }
}

/**
 * Whether the plain path, reading the answer's lists from the same indexes now, would
 * find less than a second left and mark its answer `no-store`: an index whose lifetime
 * a poll moved on (a watched list confirmed) gives it more, and the request executes.
 */
function lastSecond(sources: AnswerSources, now: number): boolean {
  return sources.some(({ index }) => index.freshUntil - now < 1_000);
}
