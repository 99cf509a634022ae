/**
 * One poller per key for the whole fleet, through Redis: a lease per key (renewed by
 * its holder at each poll) says which replica polls, and the holder publishes what it
 * found on the key's channel, which every replica with subscribers of that key
 * listens to.
 *
 * Redis is not trusted with content (as for token records, token/tokenRecord.ts):
 * whoever can reach it may PUBLISH on a channel or write a lease. So every message
 * and every lease value is sealed (AES-256-GCM, upstream/redis/seal.ts) with a key
 * derived from the fleet's secret (WFS_REDIS_KEY) and bound to its channel or lease
 * name; a replica drops, counts (`onDropped`, by reason) and never throws on
 * anything else:
 *
 *   oversized      a message over MAX_MESSAGE_BYTES (checked before anything is decoded)
 *   unsealed       not in the sealed form (plain JSON, garbage)
 *   forged         in the form, but does not open: another key, another channel, tampered
 *   malformed      opens, but is not a message of the expected shape, field by field
 *                  (or its listener threw on it)
 *   replayed       a sealed message seen already, or older than REPLAY_WINDOW_MS
 *   lease          a lease value that is not a replica's: taken over at once
 *   unpublishable  a change of ours too large for one message (delivered here only)
 *
 * The parts: the messages' wire form, receive checks and split under the size bound
 * are redisMessages.ts; the leases (sealed, read and taken in Redis scripts) are
 * redisLease.ts; this file names the Redis keys and channels, listens and publishes.
 *
 * Redis down or slow: `lead` answers true, so each replica polls for its own
 * subscribers; each replica's snapshot (poller.ts) drops a change it has already
 * delivered, so when Redis comes back and one replica leads again, no client gets a
 * change twice, and none is lost while it was away (each replica polled itself). The
 * outage is told once when it starts (`onDown`: the first failure) and once when it
 * ends (`onUp`: a connection ready again, or a lease command or PUBLISH answered; a
 * command that timed out while the connection stayed up ends in no `ready`).
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { RedisConnections } from '../upstream/redis/connection';
import { seal, sealingKey } from '../upstream/redis/seal';
import type { Coordinator } from './coordinator';
import { MIN_LEASE_MS, redisLeases } from './redisLease';
import { envelopeText, messageBatches, openMessage, replayGuard, type RedisDropReason } from './redisMessages';
import type { RecordChange } from './snapshot';

export { MIN_LEASE_MS } from './redisLease';
export { MAX_MESSAGE_BYTES, REPLAY_WINDOW_MS, type RedisDropReason } from './redisMessages';

export interface RedisCoordinatorOptions {
  /** WFS_REDIS_KEY, the fleet's secret: messages and leases are sealed with a key derived from it. */
  readonly secret: string;
  /** Told once per outage that Redis does not answer (the replica then polls its own keys). */
  readonly onDown?: (error: Error) => void;
  /** Told once when Redis answers again after `onDown`. */
  readonly onUp?: () => void;
  /** Told of each message or lease value dropped, why, and its Redis key (the channel or the lease's key). */
  readonly onDropped?: (reason: RedisDropReason, name: string) => void;
  /** Key and channel prefix: `<WFS_REDIS_KEY_PREFIX>live:` (live/index.ts). Default `wfs:live:`. */
  readonly prefix?: string;
  /** The shortest lease in ms (default MIN_LEASE_MS); tests shorten it to see a failover in 100s of ms. */
  readonly minLeaseMs?: number;
  /** Epoch milliseconds (default Date.now). */
  readonly now?: () => number;
}

/** The key that seals live messages and leases: the fleet's secret's, for this use only. */
export function liveSealingKey(secret: string): Buffer {
  return sealingKey(secret, 'wfs-subgraph live message v1');
}

/** The Redis names of a polled key (a digest of it): its channel, remembered while listened to, and its lease. */
function redisNames(prefix: string) {
  const channelOf = new Map<string, string>();
  const digest = (name: string) => createHash('sha256').update(name).digest('base64url').slice(0, 32);
  return {
    channel(name: string): string {
      let channelName = channelOf.get(name);
      if (!channelName) channelOf.set(name, (channelName = `${prefix}changes:${digest(name)}`));
      return channelName;
    },
    forgetChannel: (name: string) => channelOf.delete(name),
    lease: (name: string) => `${prefix}lease:${digest(name)}`,
  };
}

export function createRedisCoordinator(redis: RedisConnections, options: RedisCoordinatorOptions): Coordinator & { readonly replicaId: string } {
  const now = options.now ?? Date.now;
  const key = liveSealingKey(options.secret);
  const replicaId = randomUUID();
  const commands = redis.commands;
  const subscriber = redis.subscriber();
  let sequence = 0;

  const dropped = (reason: RedisDropReason, name: string) => tell(() => options.onDropped?.(reason, name));
  let down = false;
  const report = (error: Error) => {
    if (down) return;
    down = true;
    tell(() => options.onDown?.(error));
  };
  const up = () => {
    if (!down) return;
    down = false;
    tell(() => options.onUp?.());
  };

  const names = redisNames(options.prefix ?? 'wfs:live:');
  const minLeaseMs = Math.max(1, Math.ceil(options.minLeaseMs ?? MIN_LEASE_MS));
  const leases = redisLeases({ commands, key, replicaId, leaseName: names.lease, minLeaseMs, now, dropped, report, answered: up });

  const listeners = new Map<string, (changes: readonly RecordChange[]) => void>();
  const byChannel = new Map<string, string>();
  const fresh = replayGuard(now);
  // Buffers, not strings: the size is checked before anything is decoded. A throw here
  // would be an uncaught exception (ioredis rethrows a listener's), so nothing throws.
  const onMessage = (channelBytes: Buffer, bytes: Buffer) => {
    const name = channelBytes.toString('latin1');
    try {
      const listenerKey = byChannel.get(name);
      const listener = listenerKey === undefined ? undefined : listeners.get(listenerKey);
      if (!listener) return;
      const message = openMessage(key, name, bytes);
      if (typeof message === 'string') return dropped(message, name);
      if (message.from === replicaId) return;
      if (!fresh(message)) return dropped('replayed', name);
      listener(message.changes);
    } catch {
      dropped('malformed', name);
    }
  };
  // A subscription asked for while the subscriber was down may have failed: ask again.
  const resubscribe = () => {
    up();
    if (byChannel.size > 0) subscriber.subscribe(...byChannel.keys()).catch(report);
  };
  const attached: Array<[Redis, string, Parameters<Redis['on']>[1]]> = [
    [subscriber, 'messageBuffer', onMessage],
    [subscriber, 'ready', resubscribe],
    [subscriber, 'error', report],
    [commands, 'error', report],
    [commands, 'ready', up],
  ];
  for (const [connection, event, handler] of attached) connection.on(event, handler);

  return {
    replicaId,
    lead: leases.lead,
    publish(name, changes) {
      if (commands.status !== 'ready' || changes.length === 0) return;
      const channelName = names.channel(name);
      for (const batch of messageBatches(replicaId, changes, () => dropped('unpublishable', channelName))) {
        sequence += 1;
        commands.publish(channelName, seal(key, channelName, envelopeText(replicaId, sequence, now(), batch))).then(up, report);
      }
    },
    listen(name, onChanges) {
      listeners.set(name, onChanges);
      byChannel.set(names.channel(name), name);
      subscriber.subscribe(names.channel(name)).catch(report);
    },
    forget(name) {
      listeners.delete(name);
      const channelName = names.channel(name);
      byChannel.delete(channelName);
      names.forgetChannel(name);
      subscriber.unsubscribe(channelName).catch(() => undefined);
      leases.release(name);
    },
    async close() {
      leases.releaseAll();
      if (byChannel.size > 0) subscriber.unsubscribe(...byChannel.keys()).catch(() => undefined);
      listeners.clear();
      byChannel.clear();
      for (const [connection, event, handler] of attached) connection.off(event, handler);
      // The connections are the wiring's (shared with the token store): it closes them.
    },
  };
}

/** Runs a listener of the options: a failing counter or log line must not turn a dropped message or an outage into a crash. */
function tell(listener: () => void): void {
  try {
    listener();
  } catch {
    // Told and forgotten.
  }
}
