/**
 * The lifetime of what a company's entity index holds (docs/caching.md), and the
 * numbers by which work under way tells whether the index moved under it: a scan
 * (`generation`), a confirmation (`version`), an answer kept whole (`epoch`, and
 * `stillCurrent` below).
 */
import type { AnyResource } from '../resources';

/**
 * One index's lifetime and counters. Everything the index holds was asked of the
 * upstream since `startedAt`; it answers from it until `expiresAt`.
 */
export class Epochs {
  /** When the current lifetime began: everything held was asked of the upstream since. */
  startedAt: number;
  expiresAt: number;
  /** Changes whenever the index forgets what it held, or a confirmation moves the lifetime's start: a scan under way can tell. */
  generation = 0;
  /** Changes whenever what the index holds changes (learnt, forgotten, the scan moved): a confirmation under way can tell. */
  version = 0;
  /**
   * Changes whenever the index forgets everything (a change seen, its lifetime ended,
   * its tenant alone over the budget, released), and only then: an answer kept whole
   * (`AnswerSources`) is served again only while every index it read from is in the
   * epoch it read.
   */
  forgotten = 0;

  constructor(
    start: number,
    private readonly ttlMs: number,
  ) {
    this.startedAt = start;
    this.expiresAt = start + ttlMs;
  }

  /** Whether the lifetime has ended at `now`. */
  expired(now: number): boolean {
    return now >= this.expiresAt;
  }

  /**
   * Whether a page asked of the upstream at `since` may be learnt: not one asked for
   * before the current lifetime began (it may carry what a change, seen since, replaced).
   * A page from memory (`since` undefined) always may.
   */
  current(since: number | undefined): boolean {
    return since === undefined || since >= this.startedAt;
  }

  /** What the index holds changed. */
  changed(): void {
    this.version += 1;
  }

  /** The index forgot everything: a new lifetime begins at `from`. */
  restart(from: number): void {
    this.generation += 1;
    this.version += 1;
    this.forgotten += 1;
    this.startedAt = from;
    this.expiresAt = from + this.ttlMs;
  }

  /**
   * A walk of the whole list whose first page was asked for at `askedAt` confirmed what
   * the index holds: the lifetime starts again then, so what is held is served until
   * `askedAt` plus the lifetime, never more than that ahead.
   */
  confirmedAt(askedAt: number): void {
    if (askedAt <= this.startedAt) return;
    this.startedAt = askedAt;
    this.expiresAt = Math.max(this.expiresAt, askedAt + this.ttlMs);
    // A scan under way may hold pages asked for before `askedAt`, which are no longer
    // learnt: it must not move the index's scan past them (`scanFor`).
    this.generation += 1;
  }
}

/** What an answer kept whole needs of an index it read from (entityIndex.ts's `EntityIndex`). */
export interface IndexEpoch {
  /** Changes whenever the index forgets what it held. */
  readonly epoch: number;
  readonly isReleased: boolean;
  /** When its current lifetime began: it learns no page asked for before. */
  readonly lifetimeStart: number;
  /** When its current lifetime ends (a poll that confirms what it holds moves it on). */
  readonly freshUntil: number;
  /** Its lifetime has ended (what it holds would be read upstream again). */
  expired(): boolean;
}

/** One list an answer read: its resource (for the grant), the company's index it was read through, and that index's epoch then. */
export interface AnswerSource {
  readonly resource: AnyResource;
  readonly index: IndexEpoch;
  readonly epoch: number;
}

/** The lists an answer read, for an answer kept whole (docs/caching.md, "Whole answers"). */
export type AnswerSources = readonly AnswerSource[];

/**
 * Whether every index an answer read from still holds what it held then: not released
 * (evicted, swept), not cleared (a change a poll saw, here or on another replica; a
 * change a page read showed; its tenant alone over the budget), not expired. What the
 * other ways of reading serve comes from those same indexes, so an answer that passes
 * is never older than what they show.
 */
export function stillCurrent(sources: AnswerSources): boolean {
  for (const { index, epoch } of sources) if (index.isReleased || index.epoch !== epoch || index.expired()) return false;
  return true;
}
