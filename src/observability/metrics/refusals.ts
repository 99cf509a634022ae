/**
 * The counters of refusals: each reason of graphql/admission/refusals.ts names the
 * counter it is counted on (requests, connections, live), and is counted here only.
 */
import type { Counter } from 'prom-client';
import { REFUSAL_REASONS, reasonsOf, refusal, type RefusalMetric, type RefusalReason } from '../../graphql/admission/refusals';
import type { HttpMetrics } from './http';
import type { LiveMetrics } from './live';

/** The metrics refusals are counted on. */
export type RefusalCounters = Pick<HttpMetrics, 'requestsRefused' | 'connectionsRefused'> & { readonly live: Pick<LiveMetrics, 'refused'> };

/** Each refusal counter by its name. */
function refusalCounters(metrics: RefusalCounters): ReadonlyMap<RefusalMetric, Counter<'reason'>> {
  return new Map<RefusalMetric, Counter<'reason'>>([
    ['wfs_graphql_requests_refused_total', metrics.requestsRefused],
    ['wfs_http_connections_refused_total', metrics.connectionsRefused],
    ['wfs_live_subscriptions_refused_total', metrics.live.refused],
  ]);
}

/** Every refusal reason from zero on its counter, so the dashboards see zero, not "no data". */
export function startRefusalsFromZero(metrics: RefusalCounters): void {
  for (const [metric, counter] of refusalCounters(metrics)) for (const reason of reasonsOf(metric)) counter.inc({ reason }, 0);
}

/** Counts a refusal on its reason's counter; a reason outside the table (a fault of ours) is not counted under a label no dashboard knows. */
export function countRefusal(metrics: RefusalCounters, reason: string): void {
  if (!(REFUSAL_REASONS as readonly string[]).includes(reason)) return;
  const { metric } = refusal(reason as RefusalReason);
  refusalCounters(metrics).get(metric)?.inc({ reason });
}
