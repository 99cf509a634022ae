import type { RedisDropReason } from '../live/redisMessages';
import type { RejectedRecordReason } from '../upstream/token/tokenRecord';
import { MAX_RECORD_BYTES } from '../upstream/token/tokenRecord';
import { LogLimiter } from './logLimiter';
import type { Logger } from './logger';

/**
 * The warning lines for what a replica reads from Redis and drops: token records and
 * refresh locks (upstream/token/, counted in wfs_shared_token_store_rejected_records_total),
 * live-update messages and poll leases (live/redisCoordinator.ts, counted in
 * wfs_live_redis_dropped_total). Each is counted; the line says which key and the likely
 * cause, once per key and reason every 5 minutes, so a flood of forged messages on one
 * channel writes one line per window while the counter shows the rate.
 *
 * A line carries the Redis key (the prefix and a tenant id or a digest: what anyone
 * listing Redis sees) and the reason, never the value: the value may hold a sealed
 * token, or anything a stranger wrote.
 */

/** How often, per Redis key and reason, a dropped value is logged. */
export const REDIS_DROP_LOG_WINDOW_MS = 5 * 60_000;

const TOKEN_RECORD_LINES: Record<RejectedRecordReason, string> = {
  seal: 'a shared token record failed its seal check: written by another deployment with a different WFS_REDIS_KEY (give each deployment its own WFS_REDIS_KEY_PREFIX), or forged; ignored, this replica fetches its own token',
  shape: 'a shared token record or refresh lock is not as a replica writes it (fields, tenant binding, api_base, lifetime, key type, or a lock without expiry): written by a replica of another version or with other settings, or forged; ignored',
  size: `a shared token record or refresh lock is longer than any a replica writes (${MAX_RECORD_BYTES} bytes): refused unread, most likely forged; ignored`,
};

const LIVE_LINES: Record<RedisDropReason, string> = {
  oversized: 'a live-update message from Redis is longer than any a replica publishes: refused unread; something other than the replicas publishes on this channel (tampering); dropped',
  unsealed: 'a live-update message from Redis is not sealed: something other than the replicas publishes on this channel (a replica of an old version that did not seal, or tampering); dropped',
  forged: "a live-update message from Redis does not open with this deployment's key: another deployment on the same WFS_REDIS_KEY_PREFIX with a different WFS_REDIS_KEY, or tampering; dropped",
  malformed: 'a live-update message from Redis opens but is not as this version writes it: a replica of another version (a rollout in progress), or a bug; dropped',
  replayed: "a live-update message from Redis was heard before or its clock is more than 60 s from this replica's: a replica's clock is off, or messages are put back (tampering); dropped",
  lease: 'a live poll lease in Redis is no replica\'s (not sealed with this deployment\'s key, another type, or too long): another deployment on the same WFS_REDIS_KEY_PREFIX with a different WFS_REDIS_KEY, a replica of another version, or tampering; taken over',
  unpublishable: "a change this replica's poll saw is too large for one live-update message: not published; the other replicas' subscribers miss it",
};

/** Where a dropped value is told, to be logged. */
export interface RedisDropLog {
  tokenRecordRejected(reason: RejectedRecordReason, key: string): void;
  liveDropped(reason: RedisDropReason, key: string): void;
}

/** The warning lines above on `logger`, each key and reason once per window (`now`: the limiter's clock). */
export function redisDropLog(logger: Logger, now?: () => number): RedisDropLog {
  const limiter = new LogLimiter({ burst: 1, windowMs: REDIS_DROP_LOG_WINDOW_MS, ...(now && { now }) });
  const warn = (line: string, reason: string, key: string) => {
    if (limiter.allow(`${reason} ${key}`, undefined)) logger.warn({ key, reason }, line);
  };
  return {
    tokenRecordRejected: (reason, key) => warn(TOKEN_RECORD_LINES[reason], reason, key),
    liveDropped: (reason, key) => warn(LIVE_LINES[reason], reason, key),
  };
}

/** The token store's reasons, each with its line (the metric starts each from zero). */
export const REJECTED_RECORD_REASONS = Object.keys(TOKEN_RECORD_LINES) as RejectedRecordReason[];
