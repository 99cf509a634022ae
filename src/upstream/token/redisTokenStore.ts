import type { Redis } from 'ioredis';
import { RedisAvailability, type RedisOperation } from '../redis/availability';
import { connectRedis, type RedisConnections } from '../redis/connection';
import { DELETE_IF_HOLDS, READ_BOUNDED, TOO_LONG, type BoundedRead } from '../redis/scripts';
import { lockSealingKey, releaseLock, takeLock } from './refreshLock';
import type { SharedTokenStore } from './sharedRefresh';
import type { TokenGrant } from './tokenEndpoint';
import { MAX_RECORD_BYTES, openRecord, readRecord, recordKey, sealRecord, type ApiBasePolicy, type RejectedRecordReason } from './tokenRecord';

/*
 * The shared token cache and refresh lock for several replicas (docs/upstream.md,
 * "Token lifetime": at most one token request per tenant in flight across replicas).
 *
 *   {prefix}token:{tenantId}  the TokenGrant sealed with AES-256-GCM (tokenRecord.ts), expiring with the token (PX)
 *   {prefix}lock:{tenantId}   a sealed random id of the replica refreshing, SET NX PX (refreshLock.ts)
 *
 * The prefix is WFS_REDIS_KEY_PREFIX (default `wfs:`): deployments sharing one Redis
 * each need their own, or they overwrite each other's records (which then fail the seal).
 *
 * SECURITY: the token key holds a live bearer token for the tenant's data. Redis must
 * be private to the subgraph's replicas (no public network, AUTH/ACL restricted to
 * these key prefixes, TLS with rediss:// across untrusted networks). docs/upstream.md, "Shared token records", says so.
 *
 * Redis is an optimisation, not a dependency of serving: when it is down, `read`
 * answers null, `tryLock` answers a no-op release, and `write`/`discard` do nothing,
 * so each replica falls back to its own single flight (TokenCache's pending promise).
 * That single flight then holds per replica instead of across replicas; every failure
 * is reported through `onError`, and the outage once through `onDown` (and its end
 * through `onUp`). A value Redis returns that is no record of ours (forged, sealed by
 * another deployment, too long, of another type) is refused through `onRejected`: Redis
 * answered, so it is not an outage.
 */

/** Which store operation failed; `connection` is the client losing Redis. */
export type RedisTokenStoreOperation = RedisOperation;

export interface RedisTokenStoreOptions {
  /** WFS_REDIS_KEY (32+ characters): seals every record; a record that does not open is no token. */
  readonly encryptionKey: string;
  /** WFS_API_BASE_ALLOW: a record's api_base is checked with it, as a token response's is. */
  readonly apiBaseAllow?: readonly string[];
  /**
   * Whether a record may name a plain-http loopback shard that is not on the allow-list,
   * as `requestToken`'s option of the same name (false in production). Default true.
   */
  readonly apiBaseLoopback?: boolean;
  /** WFS_REDIS_KEY_PREFIX: prepended to every key, so several deployments can share one Redis. Default `wfs:`. */
  readonly keyPrefix?: string;
  /** Epoch milliseconds; the key TTL is `expiresAt - now()`. Default `Date.now`. */
  readonly now?: () => number;
  /**
   * Called for each Redis failure (the store then degrades to this replica's own tokens).
   * The error carries only a message and a code: never the command, its arguments or a token.
   */
  readonly onError?: (operation: RedisTokenStoreOperation, error: Error) => void;
  /** Told once when Redis stops answering (the first failure of the outage), as `onError`. */
  readonly onDown?: (operation: RedisTokenStoreOperation, error: Error) => void;
  /** Told once when Redis answers again after `onDown`, or for the first time after start. */
  readonly onUp?: () => void;
  /** Told of each value refused as a token record or lock, and why; the key is its Redis key. */
  readonly onRejected?: (reason: RejectedRecordReason, keyName: string) => void;
}

/** A `SharedTokenStore` on Redis: share tokens and take the refresh lock across replicas. */
export class RedisTokenStore implements SharedTokenStore {
  private readonly keyPrefix: string;
  private readonly now: () => number;
  private readonly key: Buffer;
  private readonly lockKey: Buffer;
  private readonly apiBase: ApiBasePolicy;
  /** Whether Redis answers; the handle (createRedisTokenStore) also tells it of the connection's events. */
  readonly availability: RedisAvailability;

  constructor(
    private readonly redis: Redis,
    private readonly options: RedisTokenStoreOptions,
  ) {
    this.key = recordKey(options.encryptionKey);
    this.lockKey = lockSealingKey(options.encryptionKey);
    this.apiBase = { allowList: options.apiBaseAllow ?? [], loopback: options.apiBaseLoopback ?? true };
    this.keyPrefix = options.keyPrefix ?? 'wfs:';
    this.now = options.now ?? Date.now;
    this.availability = new RedisAvailability(redis.status === 'ready', {
      onDown: (operation, error) => options.onDown?.(operation, error),
      onUp: () => options.onUp?.(),
    });
  }

  async read(tenantId: string): Promise<TokenGrant | null> {
    const keyName = this.tokenKeyName(tenantId);
    let value: string | number | null;
    try {
      value = await this.readValue(keyName);
    } catch (error) {
      this.report('read', error);
      return null;
    }
    if (value === null) return null;
    // Whatever is in Redis came over the network from a store others can write to:
    // a record that is too long, does not open with our key, or whose token is not
    // bound to this tenant and its api_base, is no token at all (the cache then
    // fetches its own).
    const grant = typeof value === 'number' ? (value === TOO_LONG ? 'size' : 'shape') : readRecord(this.key, keyName, value, tenantId, this.apiBase, this.now());
    if (typeof grant === 'string') {
      this.rejected(grant, keyName);
      return null;
    }
    return grant;
  }

  async write(grant: TokenGrant): Promise<void> {
    // Math.floor: the key must be gone by expiresAt, never a millisecond after.
    const ttlMs = Math.floor(grant.expiresAt - this.now());
    if (!(ttlMs > 0)) return;
    const keyName = this.tokenKeyName(grant.tenantId);
    const record = sealRecord(this.key, keyName, grant);
    // No replica would read it back (MAX_RECORD_BYTES): not shared, kept by this replica alone.
    if (record.length > MAX_RECORD_BYTES) return;
    try {
      await this.redis.set(keyName, record, 'PX', ttlMs);
      this.availability.answered();
    } catch (error) {
      this.report('write', error);
    }
  }

  async discard(tenantId: string, accessToken: string): Promise<void> {
    const keyName = this.tokenKeyName(tenantId);
    try {
      // The record is sealed, so the compare happens here and the delete on the
      // server only if the value is still the one we opened.
      const value = await this.readValue(keyName);
      if (typeof value !== 'string') return;
      const record = openRecord(this.key, keyName, value) as { accessToken?: unknown } | null;
      if (record?.accessToken !== accessToken) return;
      // Compare and delete on the server: a replica that saw a 401 late must not delete
      // the newer token another replica has already written.
      await this.redis.eval(DELETE_IF_HOLDS, 1, keyName, value);
      this.availability.answered();
    } catch (error) {
      this.report('discard', error);
    }
  }

  async tryLock(tenantId: string, ttlMs: number): Promise<(() => Promise<void>) | null> {
    const keyName = this.lockKeyName(tenantId);
    let value: string | null;
    try {
      value = await takeLock({ redis: this.redis, key: this.lockKey, rejected: (reason, name) => this.rejected(reason, name) }, keyName, ttlMs);
      this.availability.answered();
    } catch (error) {
      // Without Redis there is nobody to coordinate with: go ahead as if locked, and
      // TokenCache's per-process single flight keeps it to one request per replica.
      this.report('lock', error);
      return async () => undefined;
    }
    if (value === null) return null;
    const held = value;
    return async () => {
      try {
        await releaseLock(this.redis, keyName, held);
      } catch (error) {
        // The lock then expires by itself after ttlMs.
        this.report('release', error);
      }
    };
  }

  /** For the readiness probe: true when Redis answers PING. Never throws. */
  async ping(): Promise<boolean> {
    try {
      const pong = (await this.redis.ping()) === 'PONG';
      if (pong) this.availability.answered();
      return pong;
    } catch {
      return false;
    }
  }

  /** The value at `keyName` if it may be a record (a string within MAX_RECORD_BYTES), else WRONG_TYPE or TOO_LONG, unread. */
  private async readValue(keyName: string): Promise<string | number | null> {
    const read = (await this.redis.eval(READ_BOUNDED, 1, keyName, MAX_RECORD_BYTES)) as BoundedRead;
    this.availability.answered();
    return Array.isArray(read) ? read[0] : read;
  }

  private tokenKeyName(tenantId: string): string {
    return `${this.keyPrefix}token:${tenantId}`;
  }

  private lockKeyName(tenantId: string): string {
    return `${this.keyPrefix}lock:${tenantId}`;
  }

  private rejected(reason: RejectedRecordReason, keyName: string): void {
    try {
      this.options.onRejected?.(reason, keyName);
    } catch {
      // A failing counter must not turn a refused record into a failing read.
    }
  }

  private report(operation: RedisTokenStoreOperation, error: unknown): void {
    const clean = sanitize(error);
    reportError(this.options.onError, operation, clean);
    this.availability.failed(operation, clean);
  }
}

function reportError(onError: RedisTokenStoreOptions['onError'], operation: RedisTokenStoreOperation, error: Error): void {
  if (!onError) return;
  try {
    onError(operation, error);
  } catch {
    // A failing error listener must not turn a degraded store into a failing one.
  }
}

/**
 * A fresh Error with the message and code only. ioredis attaches the failed command,
 * arguments included, to reply errors (`error.command.args`): for a SET that is the
 * token record, which a logger serialising the error would print.
 */
function sanitize(error: unknown): Error {
  if (!(error instanceof Error)) return new Error('unknown Redis error');
  const clean = new Error(error.message);
  clean.name = error.name;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') Object.assign(clean, { code });
  return clean;
}

export interface RedisTokenStoreHandle {
  readonly store: RedisTokenStore;
  readonly redis: Redis;
  /** Closes the connections it opened itself (a URL given), not shared ones; never throws. */
  close(): Promise<void>;
}

/**
 * The store on the replica's Redis connections (redis/connection.ts, shared with live
 * updates), or on connections of its own to a URL (tools, tests).
 */
export function createRedisTokenStore(source: string | RedisConnections, options: RedisTokenStoreOptions): RedisTokenStoreHandle {
  const connections = typeof source === 'string' ? connectRedis(source) : source;
  const redis = connections.commands;
  const store = new RedisTokenStore(redis, options);

  // The connection's events move the store's availability; its first error of an
  // outage is also reported (reconnect attempts would repeat it every 2 s). A close is
  // an outage too: a Redis shut down cleanly sends no error until the reconnect fails.
  let down = false;
  redis.on('error', (error: unknown) => {
    const clean = sanitize(error);
    if (!down) reportError(options.onError, 'connection', clean);
    down = true;
    store.availability.failed('connection', clean);
  });
  redis.on('close', () => store.availability.failed('connection', new Error('the connection to Redis closed')));
  redis.on('ready', () => {
    down = false;
    store.availability.answered();
  });

  return {
    store,
    redis,
    close: async () => {
      if (typeof source === 'string') await connections.close();
    },
  };
}
