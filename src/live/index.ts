/**
 * Live updates assembled: the hub, what its pollers share (reader, fair poll budget,
 * coordinator, events, memory accounting), and Redis when configured. The wiring
 * (server.ts) hands in the replica's parts and gets back what the WebSocket transport
 * and the resolvers use; the live settings are read here, once.
 */
import type { Config, Limits } from '../config';
import type { ReadingServices } from '../upstream/reading/tenantReader';
import type { RedisConnections } from '../upstream/redis/connection';
import { LOCAL_COORDINATOR, type Coordinator } from './coordinator';
import { LiveHub } from './hub';
import { tenantListReader, type ListRead } from './listReader';
import type { LiveEvents } from './metrics';
import { PollBudget } from './pollBudget';
import type * as RedisCoordinatorModule from './redisCoordinator';
import type { RedisDropReason } from './redisMessages';
import { SnapshotMemory } from './snapshot';
import type { MemoryBudget } from '../memory/budget';
import { Watching } from './watch';
import { RESOURCES, type AnyResource } from '../upstream/resources';

/** What tests may set in place of the configuration (ServerOptions.live; the bounds are ServerOptions.limits). */
export interface LiveOptions {
  /** The poll interval in ms, in place of WFS_POLL_INTERVAL_SECONDS (tests observe a change in about 100 ms). */
  readonly pollIntervalMs?: number;
  /** Redis key prefix of live updates, in place of `<WFS_REDIS_KEY_PREFIX>live:` (tests run several fleets on one Redis). */
  readonly redisPrefix?: string;
  /** The shortest poll lease in Redis, in ms (default 5 s; tests shorten it to see a failover in 100s of ms). */
  readonly minLeaseMs?: number;
  /** Jitter source (0..1), for tests. */
  readonly random?: () => number;
}

export interface LiveParts {
  readonly config: Pick<Config, 'pollIntervalSeconds' | 'redisKey' | 'redisKeyPrefix'>;
  /** The hub's bounds and live polling's budget (`limits.live`, `limits.poll`). */
  readonly limits: Pick<Limits, 'live' | 'poll'>;
  /** The replica's Redis connections (app.ts), when a fleet shares the polls. */
  readonly redis?: RedisConnections | undefined;
  /** The reading side queries use: each poll walks a list through a TenantReader of its own. */
  readonly reading: ReadingServices;
  /** The replica's memory budget, which the pollers' snapshots are charged to (memory/budget.ts). */
  readonly memory: Pick<MemoryBudget, 'charge'>;
  /** The Observer port (its live events). */
  readonly events: LiveEvents;
  /** Told once per outage that Redis does not answer (the replica then polls for its own subscribers). */
  readonly onRedisDown?: (error: Error) => void;
  /** Told once when Redis answers again after `onRedisDown` (the polls are shared again). */
  readonly onRedisUp?: () => void;
  /** Told of each message or poll lease read from Redis and dropped (besides the `liveRedisDropped` event), with its Redis key: for the log line. */
  readonly onRedisDropped?: (reason: RedisDropReason, name: string) => void;
  /** Told of each change a poll saw (`polled`) or another replica's message brought (poller.ts): kept answers are dropped, gateways told. */
  readonly onChanged?: (tenantId: string, list: string, polled: boolean) => void;
  readonly options?: LiveOptions;
}

export interface Live {
  readonly hub: LiveHub;
  /** The watching choice (watch.ts); undefined with the freshness window at 0 (nothing is kept to watch). */
  readonly watching: Watching | undefined;
  close(): Promise<void>;
}

export function createLive(parts: LiveParts): Live {
  const { config, options = {} } = parts;
  // Redis's client loads only when a fleet shares the polls.
  const coordinator: Coordinator = parts.redis
    ? (require('./redisCoordinator') as typeof RedisCoordinatorModule).createRedisCoordinator(parts.redis, {
        secret: config.redisKey ?? '',
        prefix: options.redisPrefix ?? `${config.redisKeyPrefix}live:`,
        ...(options.minLeaseMs !== undefined && { minLeaseMs: options.minLeaseMs }),
        ...(parts.onRedisDown && { onDown: parts.onRedisDown }),
        ...(parts.onRedisUp && { onUp: parts.onRedisUp }),
        onDropped: (reason, name) => {
          parts.events.liveRedisDropped(reason);
          parts.onRedisDropped?.(reason, name);
        },
      })
    : LOCAL_COORDINATOR;
  const intervalMs = options.pollIntervalMs ?? config.pollIntervalSeconds * 1000;
  const windowMs = parts.reading.freshnessMs ?? 0;
  const { indexes } = parts.reading;
  const hub = new LiveHub(
    {
      intervalMs,
      read: tenantListReader(parts.reading),
      budget: new PollBudget(parts.limits.poll.callsPerSecond),
      coordinator,
      events: parts.events,
      memory: new SnapshotMemory(parts.memory),
      ...(options.random && { random: options.random }),
      ...(parts.onChanged && { onChanged: parts.onChanged }),
      // One engine for live updates and kept answers (docs/caching.md, "Watched lists"):
      // a walk that saw no change confirms what the company's index holds of the list.
      ...(windowMs > 0 && { onQuiet: (tenantId: string, list: string, read: ListRead) => void indexes.confirmed(tenantId, list, read, read.askedAt) }),
    },
    parts.limits.live,
  );
  const watching = windowMs > 0 ? watchReads(hub, parts, intervalMs, windowMs) : undefined;
  return { hub, watching, close: () => hub.close() };
}

/** The watching choice over `hub`, told of the reads of the indexes and of the pollers' turns. */
function watchReads(hub: LiveHub, parts: LiveParts, intervalMs: number, windowMs: number): Watching {
  const byName = new Map<string, AnyResource>(RESOURCES.map((resource) => [resource.name, resource]));
  const watching = new Watching(hub, { intervalMs, windowMs, now: parts.reading.indexes.now, resourceNamed: (list) => byName.get(list), recordsHeld: (tenantId, list) => parts.reading.indexes.heldOf(tenantId, list), events: parts.events });
  parts.reading.indexes.listenToReads((tenantId, list, outcome, key) => watching.read(tenantId, list, outcome, key));
  hub.onTicks((tenantId, list, calls) => watching.ticked(tenantId, list, calls));
  return watching;
}

export { LiveClosedError, LiveHub, LiveLimitError, SlowConsumerError, type LiveEvent, type LiveLimits } from './hub';
