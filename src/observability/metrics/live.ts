/**
 * Live-update metrics, fed by the live events (metricsObserver.ts). No tenant label
 * (docs/operations.md, "Metrics"): `list`, `kind`, `outcome` and `reason` only.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { RedisDropReason } from '../../live/redisMessages';
import type { PollerReason } from '../../upstream/observer';

/** Every reason a poller runs (`wfs_live_pollers{reason}`). */
const POLLER_REASONS = ['subscribers', 'watched', 'both'] as const satisfies readonly PollerReason[];

/** Every reason a message or lease read from Redis is dropped (live/redisMessages.ts). */
const REDIS_DROP_REASONS = ['oversized', 'unsealed', 'forged', 'malformed', 'replayed', 'lease', 'unpublishable'] as const satisfies readonly RedisDropReason[];

export interface LiveMetrics {
  /** Open subscriptions on this replica, by list. */
  readonly subscriptions: Gauge<'list'>;
  /** Pollers on this replica (one per company and list with subscribers or watched here), by reason, and how many of them poll (lead) rather than listen. */
  readonly pollers: Gauge<'reason'>;
  readonly pollersLeading: Gauge;
  readonly polls: Counter<'list' | 'outcome'>;
  readonly pollDuration: Histogram<'list'>;
  /** Changes found (or received from another replica) once per poller, not per subscriber. */
  readonly changes: Counter<'list' | 'kind'>;
  readonly intervalsStretched: Counter;
  readonly stretchFactor: Gauge;
  readonly slowConsumersDropped: Counter;
  readonly refused: Counter<'reason' | 'transport'>;
  /** Messages and poll leases read from Redis and dropped (live/redisCoordinator.ts), by reason. */
  readonly redisDropped: Counter<'reason'>;
  /** Open subscriptions by the subgraph protocol they came by (graphql/admission/gateOptions.ts's LiveTransport). */
  readonly transportSubscriptions: Gauge<'transport'>;
}

/** The live metrics; pollers by reason and Redis drops from zero (the first drop is an increase WfsSubgraphLiveRedisDropped sees), the stretch at 1. */
export function createLiveMetrics(registers: Registry[]): LiveMetrics {
  const live: LiveMetrics = {
    subscriptions: new Gauge({ name: 'wfs_live_subscriptions', help: 'Open live subscriptions on this replica, by list', labelNames: ['list'], registers }),
    transportSubscriptions: new Gauge({ name: 'wfs_live_transport_subscriptions', help: "Open live subscriptions on this replica, by the protocol they came by (ws: graphql-ws; sse; multipart; callback: Apollo's HTTP callback protocol)", labelNames: ['transport'], registers }),
    pollers: new Gauge({
      name: 'wfs_live_pollers',
      help: 'Live pollers on this replica, one per company and list, by reason (subscribers: live subscribers here; watched: read often by queries, docs/caching.md; both)',
      labelNames: ['reason'],
      registers,
    }),
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
    intervalsStretched: new Counter({ name: 'wfs_live_intervals_stretched_total', help: "Poll delays stretched because the company's polls wanted more than its fair share of WFS_POLL_CALLS_PER_SECOND", registers }),
    stretchFactor: new Gauge({ name: 'wfs_live_poll_stretch_factor', help: "By how much the most stretched company's poll intervals are stretched now (1: the poll budget holds)", registers }),
    slowConsumersDropped: new Counter({ name: 'wfs_live_slow_consumers_dropped_total', help: 'Subscriptions or connections dropped because their client did not read fast enough', registers }),
    refused: new Counter({ name: 'wfs_live_subscriptions_refused_total', help: 'Subscriptions, WebSocket connections and upgrades refused, by reason, one bound each (graphql/admission/refusals.ts; docs/live.md lists them): upgrades (router_secret, replica_connections, address_connections, address_blocked), connections (identity, messages, message_values, refusals), subscribes (not_initialised, subscribe_identity, connection, company_rate, document, operation, variables, cost, connection_bytes, company_bytes, replica_bytes, company_subscriptions, replica_subscriptions, filters), callback subscriptions (callback_disabled, callback_extension, callback_origin, callback_router, callback_check) and identities that lapsed (identity_lapsed); by the protocol it came by (transport: ws, sse, multipart, callback)', labelNames: ['reason', 'transport'], registers }),
    redisDropped: new Counter({
      name: 'wfs_live_redis_dropped_total',
      help: 'Live-update messages and poll leases read from Redis and dropped, by reason (oversized, unsealed, forged, malformed, replayed, lease: a lease value no replica wrote, taken over; unpublishable: a change of ours too large to publish)',
      labelNames: ['reason'],
      registers,
    }),
  };
  for (const reason of POLLER_REASONS) live.pollers.set({ reason }, 0);
  for (const reason of REDIS_DROP_REASONS) live.redisDropped.inc({ reason }, 0);
  live.stretchFactor.set(1);
  for (const transport of ['ws', 'sse', 'multipart', 'callback']) live.transportSubscriptions.set({ transport }, 0);
  return live;
}
