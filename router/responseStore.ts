/**
 * The Hive Gateway's cache as router/gateway.config.ts ships it (docs/caching.md, "Sizing
 * Hive Gateway's cache"): where Hive's response cache keeps its answers, bounded in keys,
 * saying when it drops an answer nobody read again, and knowing the cache tags each
 * answer carried so an invalidation drops only those answers.
 *
 * Why not the gateway's default (localforage, which on Node is an in-memory LRU of
 * 1,000 keys): Hive's response cache writes 1 + 2 keys per entity an answer holds (the
 * answer, and an index key each way per entity), so a page of 100 shifts with their 25
 * users is 251 keys; four such pages read in turn pushed each other out and 24 reads got
 * 0 hits, with nothing saying so. Here the bound is stated (`maxKeys`), an entity's index
 * keys live and die with their answer (an answer evicted takes them along, and they are
 * never evicted alone), and an answer evicted before any read hit it is counted and logged.
 *
 * The keys it understands are the response cache's (@graphql-mesh/plugin-response-cache,
 * its getCacheForResponseCache): `response-cache:<id>` an answer, `response-cache:<id>:<Type>.<key>`
 * and `response-cache:<Type>.<key>:<id>` its index keys, `<id>` the 64 hex digits
 * router/answerTags.ts's key builder gives. Any other key (the gateway keeps a few of its
 * own) is an item of its own in the same LRU order.
 */

/** The part of Hive's logger the store uses. */
export interface StoreLog {
  warn(...args: unknown[]): void;
}

export interface ResponseStoreOptions {
  /** Keys held at most, index keys included; past it the least recently read answer goes, with its index keys. */
  readonly maxKeys: number;
  /** Where the first eviction of an unread answer, and then at most one a minute, is told. */
  readonly log?: StoreLog | undefined;
  /** The cache tags the answer under this id carried (router/answerTags.ts), or undefined when nobody heard them. */
  readonly tagsOf?: ((id: string) => readonly string[] | undefined) | undefined;
  /** The clock, in ms (tests move it). */
  readonly now?: (() => number) | undefined;
}

/** What the store has done since it started: for the log line and tests. */
export interface ResponseStoreStats {
  /** Reads of an answer that found it. */
  hits: number;
  /** Answers evicted by the bound. */
  evicted: number;
  /** Of those, answers no read had found: a bound too small for the load, if this grows. */
  evictedUnread: number;
}

interface Item {
  value: unknown;
  /** ms since the epoch; Infinity without a TTL. */
  expiresAt: number;
  /** An answer's index keys. */
  dependents?: string[];
  /** An answer's tags; undefined: not known, so any invalidation drops it. */
  tags?: readonly string[] | undefined;
  reads: number;
  answer: boolean;
}

const PREFIX = 'response-cache:';
const ANSWER = /^response-cache:([0-9a-f]{64})$/;
const INDEX_AFTER = /^response-cache:([0-9a-f]{64}):/;
const INDEX_BEFORE = /:([0-9a-f]{64})$/;
/** Between two log lines about unread answers evicted. */
const LOG_EVERY_MS = 60_000;
/** Between two sweeps of expired items when the bound is reached (each is a walk of them all). */
const SWEEP_EVERY_MS = 1_000;

/** The owner answer's key of an index key, or undefined for any other key. */
function ownerOf(key: string): string | undefined {
  if (!key.startsWith(PREFIX) || ANSWER.test(key)) return undefined;
  const id = INDEX_AFTER.exec(key)?.[1] ?? INDEX_BEFORE.exec(key)?.[1];
  return id === undefined ? undefined : `${PREFIX}${id}`;
}

/** A KeyValueCache (get, set with a TTL in seconds, delete, getKeysByPrefix) for Hive Gateway's `cache`. */
export class ResponseStore {
  readonly stats: ResponseStoreStats = { hits: 0, evicted: 0, evictedUnread: 0 };
  private readonly maxKeys: number;
  private readonly log: StoreLog | undefined;
  private readonly tagsOf: (id: string) => readonly string[] | undefined;
  private readonly now: () => number;
  /** Answers and other keys, least recently read first. */
  private readonly items = new Map<string, Item>();
  /** Index key → its answer's key. */
  private readonly owners = new Map<string, string>();
  /** Tag → the answers that carried it. */
  private readonly tagged = new Map<string, Set<string>>();
  /** Answers whose tags nobody heard. */
  private readonly untagged = new Set<string>();
  private lastSweep = -Infinity;
  private lastLog = -Infinity;
  private unreadSinceLog = 0;

  constructor(options: ResponseStoreOptions) {
    if (!Number.isInteger(options.maxKeys) || options.maxKeys < 1) throw new Error(`maxKeys must be a positive integer, got ${options.maxKeys}`);
    this.maxKeys = options.maxKeys;
    this.log = options.log;
    this.tagsOf = options.tagsOf ?? (() => undefined);
    this.now = options.now ?? Date.now;
  }

  /** Keys held, index keys included: what `maxKeys` bounds. */
  get size(): number {
    return this.items.size + this.owners.size;
  }

  get(key: string): unknown {
    const owner = this.owners.get(key);
    if (owner !== undefined) return this.live(owner) ? {} : undefined;
    const item = this.live(key);
    if (!item) return undefined;
    // Most recently read last: the LRU order eviction walks.
    this.items.delete(key);
    this.items.set(key, item);
    item.reads += 1;
    if (item.answer) this.stats.hits += 1;
    return item.value;
  }

  set(key: string, value: unknown, options?: { ttl?: number }): void {
    const expiresAt = options?.ttl && options.ttl > 0 ? this.now() + options.ttl * 1000 : Infinity;
    const owner = ownerOf(key);
    if (owner !== undefined) {
      const answer = this.live(owner);
      // An index key of an answer not held (evicted meanwhile) would point at nothing.
      if (!answer || this.owners.has(key)) return;
      (answer.dependents ??= []).push(key);
      this.owners.set(key, owner);
    } else {
      this.remove(key);
      const answer = ANSWER.test(key);
      const item: Item = { value, expiresAt, reads: 0, answer };
      this.items.set(key, item);
      if (answer) this.index(key, item);
    }
    this.bound();
  }

  delete(key: string): boolean {
    const owner = this.owners.get(key);
    if (owner !== undefined) {
      this.owners.delete(key);
      const dependents = this.items.get(owner)?.dependents;
      dependents?.splice(dependents.indexOf(key), 1);
      return true;
    }
    return this.remove(key);
  }

  getKeysByPrefix(prefix: string): string[] {
    const keys: string[] = [];
    for (const key of this.items.keys()) if (key.startsWith(prefix)) keys.push(key);
    for (const key of this.owners.keys()) if (key.startsWith(prefix)) keys.push(key);
    return keys;
  }

  /**
   * Drops the answers that carried any of `tags`, and every answer whose tags nobody
   * heard (more than needed, never less); resolves to the answers dropped.
   */
  dropTagged(tags: Iterable<string>): number {
    const doomed = new Set(this.untagged);
    for (const tag of tags) for (const key of this.tagged.get(tag) ?? []) doomed.add(key);
    for (const key of doomed) this.remove(key);
    return doomed.size;
  }

  /** Drops every answer (a whole subgraph or type invalidated); the other keys stay. */
  dropAnswers(): number {
    let dropped = 0;
    for (const [key, item] of [...this.items]) if (item.answer && this.remove(key)) dropped += 1;
    return dropped;
  }

  private index(key: string, item: Item): void {
    item.tags = this.tagsOf(key.slice(PREFIX.length));
    if (item.tags === undefined) {
      this.untagged.add(key);
      return;
    }
    for (const tag of item.tags) {
      let answers = this.tagged.get(tag);
      if (!answers) this.tagged.set(tag, (answers = new Set()));
      answers.add(key);
    }
  }

  /** The item under `key` if it has not expired; an expired one is removed. */
  private live(key: string): Item | undefined {
    const item = this.items.get(key);
    if (item && item.expiresAt <= this.now()) {
      this.remove(key);
      return undefined;
    }
    return item;
  }

  private remove(key: string): boolean {
    const item = this.items.get(key);
    if (!item) return false;
    this.items.delete(key);
    for (const dependent of item.dependents ?? []) this.owners.delete(dependent);
    if (item.answer) {
      this.untagged.delete(key);
      for (const tag of item.tags ?? []) {
        const answers = this.tagged.get(tag);
        answers?.delete(key);
        if (answers?.size === 0) this.tagged.delete(tag);
      }
    }
    return true;
  }

  /** Over the bound: first what has expired (at most once a second), then the least recently read. */
  private bound(): void {
    if (this.size <= this.maxKeys) return;
    const now = this.now();
    if (now - this.lastSweep >= SWEEP_EVERY_MS) {
      this.lastSweep = now;
      for (const [key, item] of [...this.items]) if (item.expiresAt <= now) this.remove(key);
    }
    for (const [key, item] of this.items) {
      if (this.size <= this.maxKeys) break;
      this.remove(key);
      if (!item.answer) continue;
      this.stats.evicted += 1;
      if (item.reads === 0) this.evictedUnread(now);
    }
  }

  private evictedUnread(now: number): void {
    this.stats.evictedUnread += 1;
    this.unreadSinceLog += 1;
    if (!this.log || now - this.lastLog < LOG_EVERY_MS) return;
    this.log.warn(
      `response cache: ${this.unreadSinceLog} answer(s) evicted before any read found them (bound ${this.maxKeys} keys, ${this.stats.evictedUnread} since start); raise HIVE_RESPONSE_CACHE_MAX_KEYS (docs/caching.md, "Sizing Hive Gateway's cache")`,
    );
    this.lastLog = now;
    this.unreadSinceLog = 0;
  }
}
