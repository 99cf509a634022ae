import { UpstreamError } from '../errors';
import { DEFAULT_LIMITS, NUMERIC_SETTINGS } from '../../config';

/** The default of `WFS_UPSTREAM_CALL_BUDGET` (src/config/): upstream pages one GraphQL request may ask for. */
export const DEFAULT_UPSTREAM_CALL_BUDGET = NUMERIC_SETTINGS.WFS_UPSTREAM_CALL_BUDGET.default;

/** Empty pages in a row that still claim `has_more` before a chain counts as broken. */
export const EMPTY_PAGES_TOLERATED = 3;

/** The whole request's time, in ms, when no caller says otherwise: the server's request budget (`limits.request.budgetMs`). */
export const DEFAULT_DEADLINE_MS = DEFAULT_LIMITS.request.budgetMs;

/**
 * What one GraphQL request may cost the upstream: a number of page calls and one
 * deadline. One query against a hostile or broken upstream (empty pages with
 * `has_more: true` forever, unique pages forever) would otherwise walk for a
 * thousand calls and spend the tenant's rate limit; the budget ends it early with an
 * error that says why.
 *
 * It is created once per GraphQL request (so the request's abort signal and deadline
 * are made once, not per call) and passed down to every `listPage` of that request.
 * Each page the request asks for counts once, whether it is fetched or shared with
 * another request in flight; retries of one page are bounded by the retry policy and
 * the deadline instead.
 */
export class CallBudget {
  private used = 0;
  private readonly emptyRuns = new Map<string, number>();
  /** `performance.now()` time after which no new wait or retry starts. */
  readonly deadlineAt: number;

  constructor(
    /** Upstream page calls allowed; at least 1. */
    readonly maxCalls: number,
    /** Aborts when the request is gone or its deadline passed. */
    readonly signal: AbortSignal,
    deadlineMs: number = DEFAULT_DEADLINE_MS,
  ) {
    this.deadlineAt = performance.now() + deadlineMs;
  }

  /** Calls spent so far. */
  get spent(): number {
    return this.used;
  }

  /** Time left before the deadline, in ms (0 when passed). */
  remainingMs(): number {
    return Math.max(0, this.deadlineAt - performance.now());
  }

  /** Counts one page call, or throws once the budget is spent. */
  take(list: string): void {
    if (this.used >= this.maxCalls) {
      throw new UpstreamError(
        'UPSTREAM_BAD_RESPONSE',
        `the call budget of this request was reached (${this.maxCalls} upstream calls) while reading ${list}: the list's page chain does not end within the budget; ask for fewer records or narrow the query`,
        { cause: 'call_budget_spent' },
      );
    }
    this.used += 1;
  }

  /**
   * Notes a page the request received: a run of empty pages that still claim more is
   * a broken chain, not a slow one (no legitimate list needs several empty pages in a
   * row to reach its records).
   */
  notePage(list: string, page: { readonly items: readonly unknown[]; readonly hasMore: boolean }): void {
    if (page.items.length > 0 || !page.hasMore) {
      this.emptyRuns.delete(list);
      return;
    }
    const run = (this.emptyRuns.get(list) ?? 0) + 1;
    this.emptyRuns.set(list, run);
    if (run >= EMPTY_PAGES_TOLERATED) {
      throw new UpstreamError('UPSTREAM_BAD_RESPONSE', `the upstream sent ${run} empty ${list} pages in a row that all claim "has_more": a broken page chain`, { cause: 'broken_page_chain' });
    }
  }
}
