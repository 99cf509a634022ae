/**
 * A closed-loop load generator: `concurrency` workers, each sending its next request
 * as soon as its previous one answered, until `maxRequests` have been started or
 * `maxDurationMs` has passed, whichever comes first. Latency is measured per request
 * from just before sending to the last byte parsed, in the generator's process.
 */

export interface LoadOptions {
  readonly concurrency: number;
  readonly maxRequests: number;
  readonly maxDurationMs: number;
}

/** One timed unit of work; throws when the answer is wrong or failed. */
export type Job = () => Promise<void>;

export interface LoadResult {
  /** Requests that answered correctly. */
  readonly ok: number;
  readonly errors: number;
  /** The first error seen, for the report. */
  readonly firstError: string | null;
  /** From the first request sent to the last answer. */
  readonly durationMs: number;
  /** Whether the run ended on the time bound rather than the request count. */
  readonly timeBound: boolean;
  /** Latencies of the correct answers, in ms, sorted ascending. */
  readonly latenciesMs: Float64Array;
}

/** `makeJob(worker)` is called once per worker; the job it returns is called for each request. */
export async function runLoad(makeJob: (worker: number) => Job, options: LoadOptions): Promise<LoadResult> {
  const latencies = new Float64Array(options.maxRequests);
  let started = 0;
  let ok = 0;
  let errors = 0;
  let firstError: string | null = null;
  let timeBound = false;
  const begin = performance.now();
  const deadline = begin + options.maxDurationMs;

  const worker = async (index: number) => {
    const job = makeJob(index);
    for (;;) {
      if (started >= options.maxRequests) return;
      if (performance.now() >= deadline) {
        timeBound = true;
        return;
      }
      started += 1;
      const sent = performance.now();
      try {
        await job();
        latencies[ok] = performance.now() - sent;
        ok += 1;
      } catch (error) {
        errors += 1;
        firstError ??= error instanceof Error ? error.message : String(error);
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, (_, index) => worker(index)));
  const durationMs = performance.now() - begin;
  return { ok, errors, firstError, durationMs, timeBound, latenciesMs: latencies.slice(0, ok).sort() };
}

/** Nearest-rank percentile of sorted values; NaN when there are none. */
export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export function mean(values: Float64Array): number {
  if (values.length === 0) return Number.NaN;
  let sum = 0;
  for (const value of values) sum += value;
  return sum / values.length;
}
