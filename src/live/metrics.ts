/**
 * Live updates report through the Observer port (upstream/observer.ts: `liveRefused`,
 * `livePolled`, …); the Prometheus families are defined and fed in
 * observability/metrics.ts, as every other metric. The names and labels are those the
 * dashboards and alerts read (deploy/).
 *
 * `LiveMetrics` is what the WebSocket transport (http/liveSocket.ts) counts, in the
 * counter shape it was written against, over the same port.
 */
import type { Observer } from '../upstream/observer';

/** The live events of the Observer port. */
export type LiveEvents = Pick<
  Observer,
  'liveSubscriptions' | 'livePollers' | 'livePollersLeading' | 'livePolled' | 'liveChanged' | 'livePollStretch' | 'liveSlowConsumerDropped' | 'liveRefused' | 'liveRedisDropped'
>;

export interface LiveMetrics {
  readonly refused: { inc(labels: { reason: string }): void };
  readonly slowConsumersDropped: { inc(): void };
}

export function liveMetrics(events: LiveEvents): LiveMetrics {
  return {
    refused: { inc: ({ reason }) => events.liveRefused(reason) },
    slowConsumersDropped: { inc: () => events.liveSlowConsumerDropped() },
  };
}
