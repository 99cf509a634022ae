/**
 * The messages replicas send one another through Redis (redisCoordinator.ts): their
 * wire form, the receive path's checks (size, seal, shape, replay) and the split of a
 * poll's changes into messages under MAX_MESSAGE_BYTES.
 *
 * On the wire a message is sealed (upstream/redis/seal.ts) JSON, bound to its channel:
 *
 *   {"from":<replica id>,"seq":<1, 2, … per sender>,"at":<epoch ms>,"changes":[<RecordChange>, …]}
 */
import { sealedLength, unseal } from '../upstream/redis/seal';
import type { UpstreamRecord } from '../upstream/resources';
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

/** Why something read from Redis was dropped (the `reason` label of wfs_live_redis_dropped_total). */
export type RedisDropReason = 'oversized' | 'unsealed' | 'forged' | 'malformed' | 'replayed' | 'lease' | 'unpublishable';

export interface Message {
  readonly from: string;
  readonly seq: number;
  readonly at: number;
  readonly changes: readonly RecordChange[];
}

/**
 * The message in `bytes`, as Redis delivered it on `channel`, or why it is refused:
 * the size first (before anything is decoded), then the seal, then every field. Whether
 * it is a replay is the receiver's to say (`replayGuard`).
 */
export function openMessage(key: Buffer, channel: string, bytes: Buffer): Message | RedisDropReason {
  if (bytes.length > MAX_MESSAGE_BYTES) return 'oversized';
  const opened = unseal(key, channel, bytes.toString('latin1'));
  if ('refused' in opened) return opened.refused;
  return readMessage(opened.text) ?? 'malformed';
}

/** What a sender sent lately: its newest sequence number and those seen within SEQUENCE_WINDOW below it. */
interface Sender {
  newest: number;
  readonly seen: Set<number>;
  heardAt: number;
}

/** A receiver's memory of senders: the function it answers says whether a message is new from its sender (and remembers it); false for a replay. */
export function replayGuard(now: () => number): (message: Message) => boolean {
  const senders = new Map<string, Sender>();
  return (message) => {
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
}

/**
 * `changes` as the JSON texts of the messages `from` publishes, each under
 * MAX_MESSAGE_BYTES once sealed (`envelopeText` joins them); a change too large for any
 * message is left out and told to `unpublishable`.
 */
export function messageBatches(from: string, changes: readonly RecordChange[], unpublishable: () => void): string[][] {
  // The text of a message with the longest `from`, `seq` and `at` around no change.
  const envelope = Buffer.byteLength(envelopeText(from, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, []));
  const batches: string[][] = [];
  let batch: string[] = [];
  let bytes = envelope;
  for (const change of changes) {
    const text = JSON.stringify(change);
    const size = Buffer.byteLength(text) + 1;
    if (sealedLength(envelope + size) > MAX_MESSAGE_BYTES) {
      unpublishable();
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
}

/** A message's text (before sealing), its changes already JSON. */
export function envelopeText(from: string, seq: number, at: number, changes: readonly string[]): string {
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
