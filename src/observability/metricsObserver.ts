import type { Observer, RequestRecord } from '../upstream/observer';
import type { Metrics } from './metrics';
import { countRefusal } from './metrics/refusals';
import { BREAKER_STATE_VALUES } from './metrics/upstream';

/**
 * The Prometheus side of the events: resilience (retries, breaker, bulkhead,
 * fail-fast refusals), token requests, coalesced calls; cache lookups are added up
 * per request and counted when it ends (`requestEnded`). The per-shard call metrics
 * are counted with the calls' failure lines (upstreamObserver.ts).
 */
export function metricsObserver(metrics: Metrics, originLabel: (origin: string) => string): Partial<Observer> & { requestEnded(record: RequestRecord): void } {
  const { resilience, live } = metrics;
  return {
    liveSubscriptions: (list, delta) => live.subscriptions.inc({ list }, delta),
    livePollers: (reason, delta) => live.pollers.inc({ reason }, delta),
    cacheDropped: (cause) => metrics.cacheDrops.inc({ cause }),
    cacheConfirmed: (result) => metrics.cacheConfirmations.inc({ result }),
    cacheWatching: (decision) => metrics.cacheWatching.inc({ decision }),
    livePollersLeading: (delta) => live.pollersLeading.inc(delta),
    livePolled(list, outcome, seconds) {
      live.polls.inc({ list, outcome });
      live.pollDuration.observe({ list }, seconds);
    },
    liveChanged: (list, kind) => live.changes.inc({ list, kind }),
    livePollStretch(factor, stretched) {
      if (stretched) live.intervalsStretched.inc();
      live.stretchFactor.set(factor);
    },
    liveSlowConsumerDropped: () => live.slowConsumersDropped.inc(),
    refused: (reason, transport) => countRefusal(metrics, reason, transport),
    liveRedisDropped: (reason) => live.redisDropped.inc({ reason }),
    upstreamRetry: (list, reason) => resilience.retries.inc({ list, reason }),
    upstreamFailFast: (reason) => resilience.failFast.inc({ reason }),
    bulkheadQueued: () => resilience.bulkheadQueued.inc(),
    bulkheadRejected: () => resilience.bulkheadRejected.inc(),
    breakerTransition(origin, state) {
      // Origins come from tokens' api_base claims: the label is bounded like the call metrics'.
      const label = originLabel(origin);
      resilience.breakerState.set({ origin: label }, BREAKER_STATE_VALUES[state]);
      resilience.breakerTransitions.inc({ origin: label, state });
    },
    upstreamCoalesced: (call) => metrics.upstreamCoalesced.inc({ list: call.list }),
    requestShared: () => metrics.requestsShared.inc(),
    async tokenRequest(_tenantId, run) {
      const started = performance.now();
      let ok = false;
      try {
        const result = await run();
        ok = true;
        return result;
      } finally {
        metrics.tokenDuration.observe({ outcome: ok ? 'ok' : 'error' }, (performance.now() - started) / 1000);
      }
    },
    tokenRequestEnded: (_tenantId, outcome) => metrics.tokenRequests.inc({ outcome }),
    requestEnded(record) {
      if (!record.cacheLookups) return;
      for (const [cache, { hits, misses }] of Object.entries(record.cacheLookups)) {
        if (hits > 0) metrics.cacheRequests.inc({ cache, result: 'hit' }, hits);
        if (misses > 0) metrics.cacheRequests.inc({ cache, result: 'miss' }, misses);
      }
    },
  };
}
