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
 * Redis down or slow: `lead` answers true, so each replica polls for its own
 * subscribers; each replica's snapshot (poller.ts) drops a change it has already
 * delivered, so when Redis comes back and one replica leads again, no client gets a
 * change twice, and none is lost while it was away (each replica polled itself).
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { RedisConnections } from '../upstream/redis/connection';
import { seal, sealedLength, sealingKey, unseal } from '../upstream/redis/seal';
import type { UpstreamRecord } from '../upstream/resources';
import type { Coordinator } from './coordinator';
import { fingerprint, REMOVED_FINGERPRINT, type ChangeKind, type RecordChange } from './snapshot';

/**
 * The largest message a replica publishes or reads, in bytes as Redis delivers it.
 * A change is one record of a list (a shift or a location: well under 2 KiB as JSON),
 * so one message holds a hundred changes even of records ten times that; a poll that
 * found more publishes several. Refusing a bigger one before decoding it bounds what a
 * message from outside can cost (a forged one of 256 KiB: about 5 ms; a genuine full
 * one, 956 shift changes: about 16 ms to open and check, on a 2-core machine at load 13;
 * about 1 MiB of transient heap, against 256 MiB), and keeps every message far below
 * what Redis lets a subscriber's output buffer hold (8 MiB for 60 s by default) before
 * it disconnects it. The same bound as a WebSocket message (docs/limits.md).
 */
export const MAX_MESSAGE_BYTES = 256 * 1024;

/** A message whose clock says it is older (or newer) than this is refused as replayed; replicas' clocks should agree within it. */
export const REPLAY_WINDOW_MS = 60_000;
/** Per sender, a sequence number this far below its newest is refused as replayed; those within are remembered. */
const SEQUENCE_WINDOW = 1_024;

/** A lease outlives its holder's next poll by this factor of the delay (a late poll keeps it). */
const LEASE_DELAYS = 3;
/** At least this long, in ms (production; tests pass `minLeaseMs`). */
export const MIN_LEASE_MS = 5_000;
/** A lease value longer than this is nobody's (a sealed one is about 130 bytes). */
const MAX_LEASE_BYTES = 512;

/** Why something read from Redis was dropped (the `reason` label of wfs_live_redis_dropped_total). */
export type RedisDropReason = 'oversized' | 'unsealed' | 'forged' | 'malformed' | 'replayed' | 'lease' | 'unpublishable';

/*
 * The lease, read and taken in scripts (atomic on the server) while the seal is
 * checked here: READ answers nil when free, 0 when the key holds something no replica
 * writes (another type, or too long to be a lease), else the value. TAKE sets our
 * value if the key still holds what we read (ARGV[1]: '' free, '*' unreadable, or
 * the value), or is free now.
 */
const READ_LEASE = `
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'none' then return false end
if kind ~= 'string' or redis.call('STRLEN', KEYS[1]) > tonumber(ARGV[1]) then return 0 end
return redis.call('GET', KEYS[1])`;
const TAKE_LEASE = `
local kind = redis.call('TYPE', KEYS[1])['ok']
local free = kind == 'none'
if not free then
  if kind ~= 'string' or redis.call('STRLEN', KEYS[1]) > tonumber(ARGV[4]) then free = ARGV[1] == '*'
  else free = redis.call('GET', KEYS[1]) == ARGV[1] end
end
if not free then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1`;
const RELEASE_LEASE = `if redis.call('TYPE', KEYS[1])['ok'] == 'string' and redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

export interface RedisCoordinatorOptions {
  /** WFS_REDIS_KEY, the fleet's secret: messages and leases are sealed with a key derived from it. */
  readonly secret: string;
  /** Told once per outage that Redis does not answer (the replica then polls its own keys). */
  readonly onDown?: (error: Error) => void;
  /** Told of each message or lease value dropped, and why. */
  readonly onDropped?: (reason: RedisDropReason) => void;
  /** Key prefix (tests run several fleets on one Redis). Default `wfs:live:`. */
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

interface Message {
  readonly from: string;
  readonly seq: number;
  readonly at: number;
  readonly changes: readonly RecordChange[];
}

/** What a sender sent lately: its newest sequence number and those seen within SEQUENCE_WINDOW below it. */
interface Sender {
  newest: number;
  readonly seen: Set<number>;
  heardAt: number;
}

export function createRedisCoordinator(redis: RedisConnections, options: RedisCoordinatorOptions): Coordinator & { readonly replicaId: string } {
  const prefix = options.prefix ?? 'wfs:live:';
  const now = options.now ?? Date.now;
  const minLeaseMs = Math.max(1, Math.ceil(options.minLeaseMs ?? MIN_LEASE_MS));
  const key = liveSealingKey(options.secret);
  const replicaId = randomUUID();
  const commands = redis.commands;
  const subscriber = redis.subscriber();
  let sequence = 0;

  const dropped = (reason: RedisDropReason) => {
    try {
      options.onDropped?.(reason);
    } catch {
      // A failing counter must not turn a dropped message into a crash.
    }
  };
  let down = false;
  const report = (error: Error) => {
    if (down) return;
    down = true;
    options.onDown?.(error);
  };
  const up = () => (down = false);

  const channelOf = new Map<string, string>();
  const listeners = new Map<string, (changes: readonly RecordChange[]) => void>();
  const byChannel = new Map<string, string>();
  const heldLeases = new Map<string, string>();
  const senders = new Map<string, Sender>();
  const digest = (name: string) => createHash('sha256').update(name).digest('base64url').slice(0, 32);
  const channel = (name: string) => {
    let channelName = channelOf.get(name);
    if (!channelName) channelOf.set(name, (channelName = `${prefix}changes:${digest(name)}`));
    return channelName;
  };
  const leaseName = (name: string) => `${prefix}lease:${digest(name)}`;

  /** Whether `message` is new from its sender (and remembers it); false for a replay. */
  const fresh = (message: Message): boolean => {
    const at = now();
    if (Math.abs(at - message.at) > REPLAY_WINDOW_MS) return false;
    const sender = senders.get(message.from);
    if (!sender) {
      // Senders not heard from within the window are forgotten: a replay of theirs is now too old.
      for (const [id, old] of senders) if (at - old.heardAt > REPLAY_WINDOW_MS) senders.delete(id);
      senders.set(message.from, { newest: message.seq, seen: new Set([message.seq]), heardAt: at });
      return true;
    }
    if (message.seq <= sender.newest - SEQUENCE_WINDOW || sender.seen.has(message.seq)) return false;
    sender.seen.add(message.seq);
    sender.heardAt = at;
    if (message.seq > sender.newest) {
      sender.newest = message.seq;
      for (const seq of sender.seen) if (seq <= sender.newest - SEQUENCE_WINDOW) sender.seen.delete(seq);
    }
    return true;
  };

  // Buffers, not strings: the size is checked before anything is decoded. A throw here
  // would be an uncaught exception (ioredis rethrows a listener's), so nothing throws.
  const onMessage = (channelBytes: Buffer, bytes: Buffer) => {
    try {
      const name = channelBytes.toString('latin1');
      const listenerKey = byChannel.get(name);
      const listener = listenerKey === undefined ? undefined : listeners.get(listenerKey);
      if (!listener) return;
      if (bytes.length > MAX_MESSAGE_BYTES) return dropped('oversized');
      const opened = unseal(key, name, bytes.toString('latin1'));
      if ('refused' in opened) return dropped(opened.refused);
      const message = readMessage(opened.text);
      if (!message) return dropped('malformed');
      if (message.from === replicaId) return;
      if (!fresh(message)) return dropped('replayed');
      listener(message.changes);
    } catch {
      dropped('malformed');
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

  /** The lease's holder and end, or null when the value is no replica's. */
  const openLease = (name: string, value: string): { replica: string; until: number } | null => {
    const opened = unseal(key, name, value);
    if (!('text' in opened)) return null;
    try {
      const { replica, until } = JSON.parse(opened.text) as Record<string, unknown>;
      return typeof replica === 'string' && typeof until === 'number' && Number.isFinite(until) ? { replica, until } : null;
    } catch {
      return null;
    }
  };

  const publishable = (changes: readonly RecordChange[]): string[][] => {
    // The text of a message with the longest `from`, `seq` and `at` around no change.
    const envelope = Buffer.byteLength(envelopeText(replicaId, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, []));
    const batches: string[][] = [];
    let batch: string[] = [];
    let bytes = envelope;
    for (const change of changes) {
      const text = JSON.stringify(change);
      const size = Buffer.byteLength(text) + 1;
      if (sealedLength(envelope + size) > MAX_MESSAGE_BYTES) {
        dropped('unpublishable');
        continue;
      }
      if (sealedLength(bytes + size) > MAX_MESSAGE_BYTES) {
        batches.push(batch);
        batch = [];
        bytes = envelope;
      }
      batch.push(text);
      bytes += size;
    }
    if (batch.length > 0) batches.push(batch);
    return batches;
  };

  const release = (name: string) => {
    const value = heldLeases.get(name);
    heldLeases.delete(name);
    if (value !== undefined && commands.status === 'ready') commands.eval(RELEASE_LEASE, 1, leaseName(name), value).catch(() => undefined);
  };

  return {
    replicaId,
    async lead(name, holdMs) {
      if (commands.status !== 'ready') return true;
      const lease = leaseName(name);
      const ms = Math.max(minLeaseMs, Math.ceil(holdMs * LEASE_DELAYS));
      try {
        const current = (await commands.eval(READ_LEASE, 1, lease, MAX_LEASE_BYTES)) as string | number | null;
        let expected: string;
        if (current === null) {
          expected = '';
        } else if (typeof current !== 'string') {
          dropped('lease');
          expected = '*';
        } else {
          const holder = openLease(lease, current);
          if (!holder) dropped('lease');
          // Another replica's lease, within its time (and one lease more, for clocks that
          // differ); past that it was kept alive by someone else (PERSIST, a replay).
          else if (holder.replica !== replicaId && holder.until + ms > now()) return false;
          expected = current;
        }
        const value = seal(key, lease, JSON.stringify({ replica: replicaId, until: now() + ms }));
        const taken = (await commands.eval(TAKE_LEASE, 1, lease, expected, value, ms, MAX_LEASE_BYTES)) === 1;
        if (taken) heldLeases.set(name, value);
        return taken;
      } catch (error) {
        report(error as Error);
        return true;
      }
    },
    publish(name, changes) {
      if (commands.status !== 'ready' || changes.length === 0) return;
      const channelName = channel(name);
      for (const batch of publishable(changes)) {
        sequence += 1;
        commands.publish(channelName, seal(key, channelName, envelopeText(replicaId, sequence, now(), batch))).catch(report);
      }
    },
    listen(name, onChanges) {
      listeners.set(name, onChanges);
      byChannel.set(channel(name), name);
      subscriber.subscribe(channel(name)).catch(report);
    },
    forget(name) {
      listeners.delete(name);
      const channelName = channel(name);
      byChannel.delete(channelName);
      channelOf.delete(name);
      subscriber.unsubscribe(channelName).catch(() => undefined);
      release(name);
    },
    async close() {
      for (const name of [...heldLeases.keys()]) release(name);
      if (byChannel.size > 0) subscriber.unsubscribe(...byChannel.keys()).catch(() => undefined);
      listeners.clear();
      byChannel.clear();
      for (const [connection, event, handler] of attached) connection.off(event, handler);
      // The connections are the wiring's (shared with the token store): it closes them.
    },
  };
}

function envelopeText(from: string, seq: number, at: number, changes: readonly string[]): string {
  return `{"from":${JSON.stringify(from)},"seq":${seq},"at":${at},"changes":[${changes.join(',')}]}`;
}

const KINDS: ReadonlySet<string> = new Set<ChangeKind>(['ADDED', 'UPDATED', 'REMOVED']);

/** The message in `text`, every field checked; null when anything is not as a replica writes it. */
export function readMessage(text: string): Message | null {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return null;
  }
  if (!isObject(data)) return null;
  const { from, seq, at, changes } = data;
  if (typeof from !== 'string' || from.length === 0 || from.length > 64) return null;
  if (!Number.isSafeInteger(seq) || (seq as number) < 1) return null;
  if (typeof at !== 'number' || !Number.isFinite(at)) return null;
  if (!Array.isArray(changes) || changes.length === 0) return null;
  const read: RecordChange[] = [];
  for (const item of changes as unknown[]) {
    const change = readChange(item);
    if (!change) return null;
    read.push(change);
  }
  return { from, seq: seq as number, at, changes: read };
}

function readChange(item: unknown): RecordChange | null {
  if (!isObject(item)) return null;
  const { kind, id, record, fingerprint: print } = item;
  if (typeof kind !== 'string' || !KINDS.has(kind)) return null;
  if (typeof id !== 'string' || id.length === 0) return null;
  if (kind === 'REMOVED') return record === undefined && print === REMOVED_FINGERPRINT ? { kind, id, fingerprint: REMOVED_FINGERPRINT } : null;
  if (!isObject(record) || record.id !== id) return null;
  // The fingerprint is the record's own (snapshot.ts), so the two cannot disagree.
  if (typeof print !== 'number' || !Number.isInteger(print) || print < 0 || print > 0xffffffff || fingerprint(record as unknown as UpstreamRecord) !== print) return null;
  return { kind: kind as ChangeKind, id, record: record as unknown as UpstreamRecord, fingerprint: print };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
