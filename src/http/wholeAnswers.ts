import { hash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { ApolloServerPlugin } from '@apollo/server';
import type { GraphQLContext } from '../graphql/data/context';
import { NO_OBSERVER, type Observer } from '../upstream/observer';
import { answerStillCurrent, type AnswerSources } from '../upstream/reading/tenantReader';

/** Bytes a record unit of the memory budget stands for (`WFS_ENTITY_INDEX_MAX_RECORDS`, measured at about 300 bytes a record). */
export const UNIT_BYTES = 300;

/** What an entry costs beyond its key and body: the entry, its headers, its sources, the map's slot. */
const ENTRY_OVERHEAD_BYTES = 400;

/** An answer larger than this share of the budget is not kept: one answer must not empty the store. */
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
  readonly key: string;
  /** The JSON body as it was written, ready to write again. */
  readonly body: Buffer;
  /**
   * The answer the plain path gives in the last second of the answer's freshness, when
   * `max-age` would be 0 (docs/caching.md, "Whole answers"): `no-store`, without the
   * cache tags, so `body` up to `end` followed by `tail`. Undefined: that answer
   * could not be worked out from this one, and the request executes in that second.
   */
  readonly plain: { readonly end: number; readonly tail: string } | undefined;
  /** The response headers but `cache-control` and `content-length` (recomputed on each hit). */
  readonly headers: Readonly<Record<string, string>>;
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

/** A request that missed, and may leave its answer: its key, and what its execution made (the plugin fills it in). */
interface Candidate {
  readonly key: string;
  made?: {
    readonly operationName: string | null;
    readonly sources: AnswerSources;
    readonly until: number;
    /** The answer's extensions as written (the cache tags in them), and as the cache policy found them (`untaggedExtensions`). */
    readonly extensions: { readonly tagged: unknown; readonly untagged: unknown } | undefined;
  };
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
  /** Bytes the answers may hold together. */
  readonly maxBytes: number;
  /** Counts (or, negative, gives back) record units against the replica's memory budget (`EntityIndexes.charge`). */
  readonly charge: (units: number) => void;
  /** The header that names the company; demo mode answers a request without it for its default tenant, and such a request is never answered whole. */
  readonly tenantHeader: string;
  readonly defaultTenant?: string | undefined;
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
  /**
   * The cache policy's `untaggedExtensions` (graphql/server/cachePolicy.ts, handed at
   * wiring): the extensions an answer had before it was tagged, from which its last
   * second's answer is made (`no-store`, untagged). Without it, that second executes.
   */
  readonly untaggedExtensions?: (result: object) => { readonly extensions: unknown } | undefined;
}

/**
 * Answers kept whole (docs/caching.md, "Whole answers"): a query's JSON answer, per
 * company and request, served again before Apollo Server runs, until the answer's own
 * freshness end, so a read repeated within the window costs neither execution nor
 * Apollo's pipeline.
 *
 * Kept: the second time a request is asked within the window (`minUses`: an answer
 * asked once is not worth its copy), or the first time after its kept answer ended
 * (a request asked that often is asked again), what the cache policy
 * (graphql/server/cachePolicy.ts) marked `private, max-age`
 * (a query for one named company, without error, within a window above 0), answered 200
 * in one piece, whose reads all went through the company's entity indexes and found
 * them, at the end, still in the epoch they were in when first reached. Keyed by the
 * company the request's identity resolves to (worked out per request, as for shared
 * requests: a refused identity never hits), the content type, the accept header and
 * the body's text exactly. The grant is not in the key: it is the company's, and a hit
 * checks it now, list by list, as a kept page is checked (tenantReader.ts, `authorize`).
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
 * Bounded: `maxBytes` together (a quarter of the memory budget by default, counted in
 * it: `charge`), least recently used first out, and answers past their freshness end
 * let go by a sweep. Left alone: a request asking for a trace, a GET, a batch, and
 * demo mode's default tenant (no company named).
 */
export class WholeAnswers {
  /** In the order of last use, least recent first. */
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;
  /** Keyed by the request's signal (Apollo hands plugins a copy of the context, with the same signal); deleted by `keep`. */
  private readonly candidates = new WeakMap<AbortSignal, Candidate>();
  /** Requests asked within the window but not yet often enough to be kept: a digest of the key, to its count and when it lapses (oldest first). */
  private readonly asked = new Map<string, { uses: number; until: number }>();
  private readonly observer: Pick<Observer, 'cacheLookup'>;
  private readonly timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: WholeAnswersOptions) {
    this.observer = options.observer ?? NO_OBSERVER;
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
    return this.bytes;
  }

  /**
   * The answer kept for this request, if one is and still serves; otherwise undefined,
   * and the request, if it may leave its answer, is noted as a candidate (`keep`).
   * `key`: the request's `identicalRequestKey` (sharedRequests.ts), which resolved its
   * identity: a refused one has no key and is answered by the plain path.
   */
  async lookup(context: GraphQLContext, key: string, headers: IncomingHttpHeaders): Promise<WholeHit | undefined> {
    if (this.options.defaultTenant !== undefined && !String(headers[this.options.tenantHeader.toLowerCase()] ?? '').trim()) return undefined;
    const tenant = context.knownTenant();
    if (!tenant) return undefined;
    const entry = this.entries.get(key);
    const hit = entry && servesAs(entry, this.options.now()) && (await tenant.reader.stillServes(entry.sources)) ? this.hit(entry) : undefined;
    if (!entry || !hit) {
      if (entry && this.entries.get(key) === entry) this.drop(entry);
      this.observer.cacheLookup('whole_answers', 0, 1);
      // A request whose answer was kept (asked often enough) and has ended, by its
      // freshness end or by a change, leaves its next answer at once: it is not asked
      // once more first, which would cost an execution per window for nothing.
      if (entry || this.askedEnough(key)) this.candidates.set(context.signal, { key });
      return undefined;
    }
    if (this.entries.delete(key)) this.entries.set(key, entry);
    this.observer.cacheLookup('whole_answers', 1, 0);
    return hit;
  }

  /**
   * What the entry answers now (`servesAs`, checked again after the lookup's await):
   * itself with `private, max-age=` what is left of its freshness, or, in its last
   * second (`max-age` would be 0), what the plain path answers then from the same kept
   * pages and records: the same data, `no-store`, without cache tags. Undefined once it
   * cannot.
   */
  private hit(entry: Entry): WholeHit | undefined {
    const now = this.options.now();
    const as = servesAs(entry, now);
    if (as === 'kept') {
      const maxAge = Math.min(this.options.freshnessSeconds, Math.floor((entry.until - now) / 1000));
      return { body: entry.body, headers: { ...entry.headers, 'cache-control': `private, max-age=${maxAge}`, 'content-length': String(entry.body.length) }, operationName: entry.operationName };
    }
    if (as !== 'plain' || !entry.plain) return undefined;
    const body = Buffer.concat([entry.body.subarray(0, entry.plain.end), Buffer.from(entry.plain.tail)]);
    return { body, headers: { ...entry.headers, 'cache-control': 'no-store', 'content-length': String(body.length) }, operationName: entry.operationName };
  }

  /** The Apollo plugin that notes, for a candidate, what its answer was made of (after the cache policy set its header). */
  plugin(): ApolloServerPlugin<GraphQLContext> {
    const hooks: Awaited<ReturnType<NonNullable<ApolloServerPlugin<GraphQLContext>['requestDidStart']>>> = {
      willSendResponse: async ({ contextValue, response, operation, operationName }) => {
        const candidate = this.candidates.get(contextValue.signal);
        if (!candidate || operation?.operation !== 'query' || response.body.kind !== 'single') return;
        if (!response.http.headers.get('cache-control')?.startsWith('private, max-age=')) return;
        // A request that took another's answer (shared requests) read nothing itself: no sources, not kept.
        const freshness = contextValue.knownTenant()?.reader.freshness;
        const sources = freshness?.answerSources();
        if (!freshness || !sources) return;
        const result = response.body.singleResult;
        const untagged = this.options.untaggedExtensions?.(result);
        candidate.made = { operationName: operationName ?? null, sources, until: freshness.until, extensions: untagged && { tagged: result.extensions, untagged: untagged.extensions } };
      },
    };
    return {
      async requestDidStart() {
        return hooks;
      },
    };
  }

  /**
   * A candidate's response is worked out: kept if the plugin saw it made as it may be
   * kept, it is a 200 in one piece with the cache policy's `private, max-age`, and what
   * it was made of is still current. `headers`: the response's, as they are written.
   */
  keep(signal: AbortSignal, status: number | undefined, headers: Readonly<Record<string, string>>, text: string): void {
    const candidate = this.candidates.get(signal);
    if (!candidate) return;
    this.candidates.delete(signal);
    const made = candidate.made;
    if (!made || (status ?? 200) !== 200 || !headers['cache-control']?.startsWith('private, max-age=')) return;
    if (made.until - this.options.now() < 1_000 || !answerStillCurrent(made.sources)) return;
    const body = Buffer.from(text);
    const plain = made.extensions && plainAnswer(text, body.length, made.extensions);
    const bytes = body.length + Buffer.byteLength(candidate.key) + (plain?.tail.length ?? 0) + ENTRY_OVERHEAD_BYTES;
    if (bytes > this.options.maxBytes * LARGEST_SHARE) return;
    const kept: Record<string, string> = {};
    for (const name in headers) if (name !== 'cache-control' && name !== 'content-length') kept[name] = headers[name]!;
    const entry: Entry = { key: candidate.key, body, plain, headers: kept, until: made.until, sources: made.sources, operationName: made.operationName, units: Math.ceil(bytes / UNIT_BYTES), bytes };
    const old = this.entries.get(entry.key);
    if (old) this.drop(old);
    this.entries.set(entry.key, entry);
    this.bytes += bytes;
    for (const [, first] of this.entries) {
      if (this.bytes <= this.options.maxBytes) break;
      this.drop(first);
    }
    // Counted last: the charge may evict indexes (this answer's among them, which then ends it).
    this.options.charge(entry.units);
  }

  /**
   * Whether a request that missed has now been asked `minUses` times within the window
   * (counting this one), so that its answer may be kept. Remembered by a digest (the key
   * holds the whole body), at most `remembered` of them, the oldest forgotten first.
   */
  private askedEnough(key: string): boolean {
    const minUses = this.options.minUses ?? 2;
    if (minUses <= 1) return true;
    const digest = hash('sha1', key, 'base64');
    const now = this.options.now();
    const known = this.asked.get(digest);
    const uses = known && known.until > now ? known.uses + 1 : 1;
    this.asked.delete(digest);
    if (uses >= minUses) return true;
    this.asked.set(digest, { uses, until: now + this.options.freshnessSeconds * 1000 });
    for (const [oldest] of this.asked) {
      if (this.asked.size <= (this.options.remembered ?? MAX_REMEMBERED)) break;
      this.asked.delete(oldest);
    }
    return false;
  }

  /** Lets go of every answer past its freshness end, and every request asked too long ago to count (the timer calls this). */
  sweep(): void {
    const now = this.options.now();
    for (const entry of [...this.entries.values()]) if (entry.until <= now) this.drop(entry);
    for (const [digest, { until }] of this.asked) if (until <= now) this.asked.delete(digest);
  }

  /** Stops the sweep and lets go of everything. */
  close(): void {
    clearInterval(this.timer);
    for (const entry of [...this.entries.values()]) this.drop(entry);
    this.asked.clear();
  }

  private drop(entry: Entry): void {
    if (!this.entries.delete(entry.key)) return;
    this.bytes -= entry.bytes;
    this.options.charge(-entry.units);
  }
}

/**
 * The answer the plain path writes for the same data once `max-age` would be 0: the
 * cache policy then marks it `no-store` and adds no tags, so it is the kept answer with
 * the extensions it had before its tags (`untagged`; none: no `extensions` at all).
 * Worked out from the written text, which ends with the tagged extensions (the
 * answer's JSON is `{"data":...,"extensions":...}`, errors never being kept): the
 * bytes before them (`end`) and what follows instead (`tail`). Undefined if the text
 * does not end as expected: then that second executes, as without this.
 */
function plainAnswer(text: string, bytes: number, extensions: { readonly tagged: unknown; readonly untagged: unknown }): { end: number; tail: string } | undefined {
  const written = `,"extensions":${JSON.stringify(extensions.tagged)}}`;
  if (!text.endsWith(written)) return undefined;
  const tail = extensions.untagged === undefined ? '}' : `,"extensions":${JSON.stringify(extensions.untagged)}}`;
  return { end: bytes - Buffer.byteLength(written), tail };
}

/**
 * How an entry can answer at `now`: as kept (a second or more of its freshness left),
 * as the plain path's answer of its last second (`plain`, when that could be worked out
 * and the plain path would find less than a second left too), or not at all.
 */
function servesAs(entry: Entry, now: number): 'kept' | 'plain' | undefined {
  const left = entry.until - now;
  if (left >= 1_000) return 'kept';
  return left > 0 && entry.plain !== undefined && lastSecond(entry.sources, now) ? 'plain' : undefined;
}

/**
 * Whether the plain path, reading the answer's lists from the same indexes now, would
 * find less than a second left and mark its answer `no-store`: an index whose lifetime
 * a poll moved on (a watched list confirmed) gives it more, and the request executes.
 */
function lastSecond(sources: AnswerSources, now: number): boolean {
  return sources.some(({ index }) => index.freshUntil - now < 1_000);
}
