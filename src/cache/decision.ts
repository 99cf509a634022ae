/**
 * The decision "may this answer be kept, by whom, for how long" as one value (policy.ts
 * makes it once per response), and what a request carries of it on its context. Apart
 * from the policy so that the request's context can name it without importing the
 * policy, which reads the context.
 */
import type { AnswerSources } from '../upstream/reading/tenantReader';

/** What may be done with one answer, decided once (`CachePolicy`'s plugin) and read by every edge. */
export interface CacheDecision {
  /** Seconds a cache may keep the answer for its company: `private, max-age=`; 0: `no-store`. */
  readonly maxAge: number;
  /** The request headers that decide whose answer it is (`Vary`): on an answer a cache may keep only. */
  readonly vary?: string;
  /** Whether and until when the store may keep it whole: only for a request the store asked for (`CacheTicket.keepAs`). */
  readonly keep?: KeepWhole;
}

/** What the store needs to keep an answer whole (answers.ts). */
export interface KeepWhole {
  /** The answer's freshness end (ms, the indexes' clock): the instant its `max-age` was counted from. */
  readonly until: number;
  /** The company's indexes it was read through, each in its epoch then, and the lists' resources (for the grant). */
  readonly sources: AnswerSources;
  /** The operation name the request resolved to (its metrics and debug line on a hit). */
  readonly operationName: string | null;
  /**
   * The body to serve in its last second, when `max-age` would be 0: the same data
   * without the tags, as the plain path then writes it `no-store`. Undefined once
   * something after the policy changed the answer's extensions (then that second executes).
   */
  readonly lastSecond: () => string | undefined;
}

/**
 * One request's side of the cache, on its context: the store's offer (the key it
 * would keep the answer under) and the decision made for the answer. A plain object
 * Apollo Server's shallow copy of the context shares.
 */
export interface CacheTicket {
  keepAs: string | undefined;
  decision: CacheDecision | undefined;
}

export const NOT_KEPT: CacheDecision = Object.freeze({ maxAge: 0 });

/** The decision for a request that takes another's answer (shared requests): the same, never kept whole (it read nothing itself). */
export function taken(decision: CacheDecision): CacheDecision {
  return decision.keep ? { maxAge: decision.maxAge, ...(decision.vary !== undefined && { vary: decision.vary }) } : decision;
}

const NO_STORE: Readonly<Record<string, string>> = Object.freeze({ 'cache-control': 'no-store' });

/** The response headers of a decision: `Cache-Control`, and `Vary` on an answer a cache may keep. */
export function headersOf(decision: CacheDecision): Readonly<Record<string, string>> {
  if (decision.maxAge < 1) return NO_STORE;
  return { 'cache-control': `private, max-age=${decision.maxAge}`, ...(decision.vary && { vary: decision.vary }) };
}

