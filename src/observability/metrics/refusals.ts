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
function refusalCounters(metrics: RefusalCounters): ReadonlyMap<RefusalMetric, Counter<'reason' | 'transport'>> {
  return new Map<RefusalMetric, Counter<'reason' | 'transport'>>([
    ['wfs_graphql_requests_refused_total', metrics.requestsRefused],
    ['wfs_http_connections_refused_total', metrics.connectionsRefused],
    ['wfs_live_subscriptions_refused_total', metrics.live.refused],
  ]);
}

/** The live counter's `transport` label: the subgraph protocol a subscription came by (graphql/admission/gateOptions.ts, `LiveTransport`). */
const TRANSPORTS: readonly string[] = ['ws', 'sse', 'multipart', 'callback'];
const LIVE = 'wfs_live_subscriptions_refused_total';

/** Every refusal reason from zero on its counter (the live ones by transport too), so the dashboards see zero, not "no data". */
export function startRefusalsFromZero(metrics: RefusalCounters): void {
  for (const [metric, counter] of refusalCounters(metrics)) {
    for (const reason of reasonsOf(metric)) {
      if (metric === LIVE) for (const transport of TRANSPORTS) counter.inc({ reason, transport }, 0);
      else counter.inc({ reason }, 0);
    }
  }
}

/**
 * Counts a refusal on its reason's counter, a live one under its transport (graphql-ws
 * unless said: the upgrades and the WebSocket's own bounds); a reason or transport
 * outside the tables (a fault of ours) is not counted under a label no dashboard knows.
 */
export function countRefusal(metrics: RefusalCounters, reason: string, transport = 'ws'): void {
  if (!(REFUSAL_REASONS as readonly string[]).includes(reason)) return;
  const { metric } = refusal(reason as RefusalReason);
  if (metric !== LIVE) return void refusalCounters(metrics).get(metric)?.inc({ reason });
  if (TRANSPORTS.includes(transport)) refusalCounters(metrics).get(metric)?.inc({ reason, transport });
}
