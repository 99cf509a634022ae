/**
 * One poller per key for the whole fleet, through Redis: a lease per key (`SET NX
 * PX`, renewed by its holder at each poll) says which replica polls, and the
 * holder publishes what it found on the key's channel, which every replica with
 * subscribers of that key listens to.
 *
 * Redis down or slow: `lead` answers true, so each replica polls for its own
 * subscribers; each replica's snapshot (poller.ts) drops a change it has already
 * delivered, so when Redis comes back and one replica leads again, no client gets a
 * change twice, and none is lost while it was away (each replica polled itself).
 */
import { createHash, randomUUID } from 'node:crypto';
import { Redis, type RedisOptions } from 'ioredis';
import type { Coordinator } from './coordinator';
import type { RecordChange } from './snapshot';

/** Renews the lease if held by us, takes it if free; 1 when we hold it afterwards. */
const LEAD_SCRIPT = `
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end
if not holder then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end
return 0`;
const RELEASE_SCRIPT = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

/** A lease outlives its holder's next poll by this factor of the delay (a late poll keeps it). */
const LEASE_DELAYS = 3;
/** At least this long, in ms. */
const MIN_LEASE_MS = 5_000;

interface Message {
  readonly from: string;
  readonly changes: readonly RecordChange[];
}

export interface RedisCoordinatorOptions {
  /** Told once per outage that Redis does not answer (the replica then polls its own keys). */
  readonly onDown?: (error: Error) => void;
  /** Key prefix (tests run several fleets on one Redis). Default `wfs:live:`. */
  readonly prefix?: string;
}

export function createRedisCoordinator(url: string, options: RedisCoordinatorOptions = {}): Coordinator & { readonly replicaId: string } {
  const prefix = options.prefix ?? 'wfs:live:';
  const replicaId = randomUUID();
  const redisOptions: RedisOptions = {
    // Commands fail at once while disconnected: the poller then polls itself.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 1_000,
    connectTimeout: 2_000,
    retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
  };
  const commands = new Redis(url, redisOptions);
  // A subscriber connection re-subscribes on reconnect by itself; it queues while offline.
  const subscriber = new Redis(url, { ...redisOptions, enableOfflineQueue: true, commandTimeout: undefined });
  let down = false;
  const report = (error: Error) => {
    if (down) return;
    down = true;
    options.onDown?.(error);
  };
  commands.on('error', report);
  subscriber.on('error', report);
  commands.on('ready', () => (down = false));

  const channelOf = new Map<string, string>();
  const listeners = new Map<string, (changes: readonly RecordChange[]) => void>();
  const digest = (key: string) => createHash('sha256').update(key).digest('base64url').slice(0, 32);
  const channel = (key: string) => {
    let name = channelOf.get(key);
    if (!name) channelOf.set(key, (name = `${prefix}changes:${digest(key)}`));
    return name;
  };
  const lease = (key: string) => `${prefix}lease:${digest(key)}`;
  const byChannel = new Map<string, string>();

  subscriber.on('message', (name: string, text: string) => {
    const key = byChannel.get(name);
    const listener = key === undefined ? undefined : listeners.get(key);
    if (!listener) return;
    let message: Message;
    try {
      message = JSON.parse(text) as Message;
    } catch {
      return;
    }
    if (message.from === replicaId || !Array.isArray(message.changes)) return;
    listener(message.changes);
  });

  return {
    replicaId,
    async lead(key, holdMs) {
      if (commands.status !== 'ready') return true;
      try {
        const held = await commands.eval(LEAD_SCRIPT, 1, lease(key), replicaId, String(Math.max(MIN_LEASE_MS, Math.ceil(holdMs * LEASE_DELAYS))));
        return held === 1;
      } catch (error) {
        report(error as Error);
        return true;
      }
    },
    publish(key, changes) {
      if (commands.status !== 'ready') return;
      commands.publish(channel(key), JSON.stringify({ from: replicaId, changes } satisfies Message)).catch(report);
    },
    listen(key, onChanges) {
      listeners.set(key, onChanges);
      byChannel.set(channel(key), key);
      subscriber.subscribe(channel(key)).catch(report);
    },
    forget(key) {
      listeners.delete(key);
      const name = channel(key);
      byChannel.delete(name);
      channelOf.delete(key);
      subscriber.unsubscribe(name).catch(() => undefined);
      if (commands.status === 'ready') commands.eval(RELEASE_SCRIPT, 1, lease(key), replicaId).catch(() => undefined);
    },
    async close() {
      await Promise.allSettled([commands.quit(), subscriber.quit()]);
      commands.disconnect();
      subscriber.disconnect();
    },
  };
}
