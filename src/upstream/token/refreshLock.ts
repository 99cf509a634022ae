/**
 * The cross-replica refresh lock of redisTokenStore.ts: one Redis key per tenant whose
 * sealed value (../redis/seal.ts, bound to the key's name) says a replica is fetching
 * the tenant's token, set with an expiry so that the lock of a replica that died goes
 * by itself.
 *
 * Whoever can write to Redis without WFS_REDIS_KEY could once lock a company out: a
 * `SET {prefix}lock:<tenant> x` with no expiry made every refresh of that company wait
 * 10 s for a replica that did not exist, answer UPSTREAM_UNAVAILABLE, and then fail
 * fast, for as long as the key stayed. Now a lock is trusted only as a replica writes
 * it: a string of a lock's length, sealed with our key, and expiring within the lock's
 * life. Anything else (forged, another type, too long, no expiry or a longer one, as
 * PERSIST leaves a real lock) is refused (`rejected`, by reason) and taken over at
 * once in a script that replaces it only if it still holds what was read, so the one
 * replica that wins fetches for the fleet, and the others wait for it as usual. A real
 * lock replayed with an expiry is not told from one: the waiter's deadline
 * (sharedRefresh.ts) bounds what it costs.
 *
 * Every replica gives its lock the same life (TokenCache's lockTtlMs, 30 s), so a lock
 * that would outlive ours was not set by a replica. During a rolling deploy from a
 * version that wrote unsealed locks, the new replicas take the old ones' locks over: a
 * second token request at most, and a `seal` line per tenant and 5 minutes.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { DELETE_IF_HOLDS, READ_BOUNDED, TAKE_IF_UNCHANGED, TOO_LONG, type BoundedRead } from '../redis/scripts';
import { seal, sealingKey, unseal } from '../redis/seal';
import type { RejectedRecordReason } from './tokenRecord';

/** A lock value longer than this is no replica's (a sealed one is about 80 bytes). */
const MAX_LOCK_BYTES = 512;

/** The key that seals lock values: the fleet's secret's, for this use only. */
export function lockSealingKey(secret: string): Buffer {
  return sealingKey(secret, 'wfs-subgraph refresh lock v1');
}

export interface LockParts {
  readonly redis: Redis;
  /** lockSealingKey(WFS_REDIS_KEY). */
  readonly key: Buffer;
  /** Told of a lock value no replica wrote, before it is taken over. */
  readonly rejected: (reason: RejectedRecordReason, keyName: string) => void;
}

/**
 * Takes the lock at `keyName` for `ttlMs`, or takes over one that is no replica's:
 * the value to release it with, or null while a replica holds it. Throws what Redis
 * throws (the store reports it and goes on without a lock).
 */
export async function takeLock(parts: LockParts, keyName: string, ttlMs: number): Promise<string | null> {
  const { redis, key } = parts;
  // The random id makes each value unique: our lock is told from the one another
  // replica took after ours expired.
  const value = seal(key, keyName, JSON.stringify({ id: randomUUID() }));
  const ms = Math.max(1, Math.ceil(ttlMs));
  if ((await redis.set(keyName, value, 'PX', ms, 'NX')) === 'OK') return value;
  const current = (await redis.eval(READ_BOUNDED, 1, keyName, MAX_LOCK_BYTES)) as BoundedRead;
  let expected: string;
  if (current === null) {
    // Released between our SET and the read: take it if it is still free.
    expected = '';
  } else if (typeof current === 'number') {
    parts.rejected(current === TOO_LONG ? 'size' : 'shape', keyName);
    expected = '*';
  } else {
    const [held, pttl] = current;
    const refused = untrusted(key, keyName, held, pttl, ms);
    if (!refused) return null;
    parts.rejected(refused, keyName);
    expected = held;
  }
  // Taken only if it still holds what was read: of the replicas that refused it, one wins.
  return (await redis.eval(TAKE_IF_UNCHANGED, 1, keyName, expected, value, ms, MAX_LOCK_BYTES)) === 1 ? value : null;
}

/**
 * Deletes the lock at `keyName` if it still holds `value`: a replica whose lock expired
 * while it was still fetching must not delete the one another replica has taken since.
 */
export async function releaseLock(redis: Redis, keyName: string, value: string): Promise<void> {
  await redis.eval(DELETE_IF_HOLDS, 1, keyName, value);
}

/**
 * Why a lock value is not a replica's, or undefined when it is: it must open with our
 * key at this name, hold an id, and expire within the lock's life (a replica always
 * sets one: `PTTL` -1 means someone made it permanent, a longer one someone else set it).
 */
function untrusted(key: Buffer, keyName: string, value: string, pttl: number, ttlMs: number): RejectedRecordReason | undefined {
  const opened = unseal(key, keyName, value);
  if (!('text' in opened)) return 'seal';
  try {
    const { id } = JSON.parse(opened.text) as Record<string, unknown>;
    if (typeof id !== 'string') return 'shape';
  } catch {
    return 'shape';
  }
  return pttl > 0 && pttl <= ttlMs ? undefined : 'shape';
}
