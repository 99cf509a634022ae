import { PerformanceObserver } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Registry } from 'prom-client';
import { waitFor } from './waitFor';

/** V8's `gc()`, exposed for this process (the suites that count what is let go call it). */
export function exposedGc(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

/** Allocates short-lived objects, enough for V8 to collect now and then. */
export function allocate(): void {
  let keep: unknown[] = [];
  for (let i = 0; i < 200_000; i++) {
    keep.push({ i, text: `garbage ${i}` });
    if (keep.length > 10_000) keep = [];
  }
}

/** The collections `registry`'s `nodejs_gc_duration_seconds` histogram counted. */
export async function gcCounted(registry: Registry): Promise<number> {
  const { values } = await registry.getSingleMetric('nodejs_gc_duration_seconds')!.get();
  return values.filter((value) => (value as { metricName?: string }).metricName === 'nodejs_gc_duration_seconds_count').reduce((sum, value) => sum + value.value, 0);
}

/**
 * Collects, and resolves once an observer of its own was told of it: GC observers are
 * told on a later turn, all at once, so one still connected has been told by then too.
 */
export async function collectSeen(gc: () => void): Promise<void> {
  let seen = 0;
  const control = new PerformanceObserver((list) => (seen += list.getEntries().length));
  control.observe({ entryTypes: ['gc'] });
  try {
    gc();
    await waitFor(() => seen > 0, 'the collection told to an observer still connected');
  } finally {
    control.disconnect();
  }
}
