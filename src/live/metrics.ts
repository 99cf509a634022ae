import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/**
 * The live-update metrics, in the server's registry. No tenant label (docs/operations.md,
 * "Metrics"): `list` and `kind` only.
 */
export interface LiveMetrics {
  /** Open subscriptions on this replica, by list. */
  readonly subscriptions: Gauge<'list'>;
  /** Pollers on this replica (one per company, list and filter with subscribers here), and how many of them poll (lead) rather than listen. */
  readonly pollers: Gauge;
  readonly pollersLeading: Gauge;
  readonly polls: Counter<'list' | 'outcome'>;
  readonly pollDuration: Histogram<'list'>;
  /** Changes found (or received from another replica) once per poller, not per subscriber. */
  readonly changes: Counter<'list' | 'kind'>;
  readonly intervalsStretched: Counter;
  readonly stretchFactor: Gauge;
  readonly slowConsumersDropped: Counter;
  readonly refused: Counter<'reason'>;
  /** Messages and poll leases read from Redis and dropped (live/redisCoordinator.ts), by reason. */
  readonly redisDropped: Counter<'reason'>;
}

export function createLiveMetrics(registry: Registry): LiveMetrics {
  const registers = [registry];
  return {
    subscriptions: new Gauge({ name: 'wfs_live_subscriptions', help: 'Open live subscriptions on this replica, by list', labelNames: ['list'], registers }),
    pollers: new Gauge({ name: 'wfs_live_pollers', help: 'Live pollers on this replica: one per company, list and filter with subscribers here', registers }),
    pollersLeading: new Gauge({ name: 'wfs_live_pollers_leading', help: 'Live pollers that poll the upstream from this replica (hold the Redis lease, or no Redis); the others hear another replica', registers }),
    polls: new Counter({ name: 'wfs_live_polls_total', help: 'Live polls (one walk of a list each), by list and outcome (ok, error: tried again next interval, fatal: subscriptions ended)', labelNames: ['list', 'outcome'], registers }),
    pollDuration: new Histogram({
      name: 'wfs_live_poll_duration_seconds',
      help: 'Duration of a live poll (every page of the list), by list',
      labelNames: ['list'],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20],
      registers,
    }),
    changes: new Counter({ name: 'wfs_live_changes_total', help: 'Changes found by live polls or heard from another replica, once per poller (not per subscriber), by list and kind', labelNames: ['list', 'kind'], registers }),
    intervalsStretched: new Counter({ name: 'wfs_live_intervals_stretched_total', help: 'Poll delays stretched because all live polls together wanted more than WFS_POLL_CALLS_PER_SECOND', registers }),
    stretchFactor: new Gauge({ name: 'wfs_live_poll_stretch_factor', help: 'By how much every poll interval is stretched now (1: the poll budget holds)', registers }),
    slowConsumersDropped: new Counter({ name: 'wfs_live_slow_consumers_dropped_total', help: 'Subscriptions or connections dropped because their client did not read fast enough', registers }),
    refused: new Counter({ name: 'wfs_live_subscriptions_refused_total', help: 'Subscriptions refused, by reason (connection, company or replica limit, identity, cost, document; rate: connections closed past a bound; address: upgrades refused for their address)', labelNames: ['reason'], registers }),
    redisDropped: new Counter({
      name: 'wfs_live_redis_dropped_total',
      help: 'Live-update messages and poll leases read from Redis and dropped, by reason (oversized, unsealed, forged, malformed, replayed, lease: a lease value no replica wrote, taken over; unpublishable: a change of ours too large to publish)',
      labelNames: ['reason'],
      registers,
    }),
  };
}
