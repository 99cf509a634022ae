/**
 * Live updates report through the Observer port (upstream/observer.ts: `refused`,
 * `livePolled`, …); the Prometheus families are defined in observability/metrics/live.ts
 * and fed in observability/metricsObserver.ts, as every other metric. The names and
 * labels are those the dashboards and alerts read (deploy/). The subscribe gate (graphql/admission/subscribeGate.ts:
 * identity, slots, company rate, document, cost) and the WebSocket transport
 * (http/liveSocket.ts: connections, strikes, messages) report their refusals and slow
 * consumers over the same port (`refused`, `liveSlowConsumerDropped`), wired in server.ts.
 */
import type { Observer } from '../upstream/observer';

/** The live events of the Observer port. */
export type LiveEvents = Pick<
  Observer,
  'liveSubscriptions' | 'livePollers' | 'livePollersLeading' | 'livePolled' | 'liveChanged' | 'livePollStretch' | 'liveSlowConsumerDropped' | 'refused' | 'liveRedisDropped' | 'cacheWatching'
>;
