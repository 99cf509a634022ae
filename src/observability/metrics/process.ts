/**
 * The replica's own metrics: Node's and the process's (prom-client's defaults, the GC
 * histogram fed by an observer of our own), whether `/ready` answers ready, and the log
 * lines the per-key rate limit held back.
 */
import { PerformanceObserver, constants as performanceConstants } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, collectDefaultMetrics, type Registry } from 'prom-client';

export interface ReplicaMetrics {
  /** 1 while `/ready` answers ready, 0 while it answers 503 (not ready yet, or draining); set at each /ready and /metrics. */
  readonly ready: Gauge;
  readonly logLinesSuppressed: Counter<'event'>;
}

/** prom-client's name for its GC histogram, and what its default GC collector gives it. */
const GC_DURATION = {
  name: 'nodejs_gc_duration_seconds',
  help: 'Garbage collection duration by kind, one of major, minor, incremental or weakcb.',
  buckets: [0.001, 0.01, 0.1, 1, 2, 5],
} as const;

const GC_KINDS: Readonly<Record<number, string>> = {
  [performanceConstants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [performanceConstants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [performanceConstants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [performanceConstants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};

/**
 * prom-client's default metrics (`process_*`, `nodejs_*`), the same names, help and
 * buckets, with one difference: the GC histogram is fed by an observer that the returned
 * function disconnects.
 *
 * prom-client's own GC collector starts a PerformanceObserver that nothing can disconnect
 * (prometheus/client_js#500, open since 2022). Node keeps every observer for the process's
 * life, and through its callback the registry, every metric's collect function and what
 * they reach: the HTTP server, the caches, the company's records. A process that starts and
 * closes servers kept each one whole (measured on 28 November 2026: the test line's Jest
 * workers held every suite's servers, 450 MB of heap each by the end).
 *
 * The histogram is registered before the defaults. prom-client registers its GC collector
 * last (lib/defaultMetrics.js), and that collector's registering under a name already
 * taken throws before its observer starts: that error, and only that one, is expected.
 * test/unit/processMetrics.test.ts checks that every default metric is still served.
 */
export function collectProcessMetrics(registry: Registry): () => void {
  const gcDuration = new Histogram({ ...GC_DURATION, buckets: [...GC_DURATION.buckets], labelNames: ['kind'], registers: [registry] });
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      // A GC entry's `detail` is `{ kind, flags }` (Node's perf_hooks documentation, "Garbage Collection ('gc') Details").
      const kind = GC_KINDS[(entry as { detail?: { kind?: number } | null }).detail?.kind ?? -1];
      if (kind) gcDuration.observe({ kind }, entry.duration / 1000);
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  try {
    collectDefaultMetrics({ register: registry });
  } catch (error) {
    if (!(error instanceof Error && error.message.includes(GC_DURATION.name))) {
      observer.disconnect();
      throw error;
    }
  }
  return () => observer.disconnect();
}

/** Readiness (ready from the start) and the log lines suppressed (the upstream failure line's series from zero). */
export function createReplicaMetrics(registers: Registry[]): ReplicaMetrics {
  const metrics: ReplicaMetrics = {
    ready: new Gauge({
      name: 'wfs_ready',
      help: '1 while /ready answers ready, 0 while it answers 503 (not ready yet, or draining)',
      registers,
    }),
    logLinesSuppressed: new Counter({
      name: 'wfs_log_lines_suppressed_total',
      help: 'Log lines not written by the per-key log rate limit (their count is logged periodically)',
      labelNames: ['event'],
      registers,
    }),
  };
  metrics.logLinesSuppressed.inc({ event: 'upstream_call_failed' }, 0);
  metrics.ready.set(1);
  return metrics;
}
