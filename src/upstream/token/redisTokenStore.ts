import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { connectRedis, type RedisConnections } from '../redis/connection';
import type { SharedTokenStore } from './tokenCache';
import type { TokenGrant } from './tokenEndpoint';
import { openRecord, recordKey, sealRecord, verifyRecord, type ApiBasePolicy } from './tokenRecord';

/*
 * The shared token cache and refresh lock for several replicas (docs/upstream.md,
 * "Token lifetime": at most one token request per tenant in flight across replicas).
 *
 *   {prefix}token:{tenantId}  the TokenGrant sealed with AES-256-GCM (tokenRecord.ts), expiring with the token (PX)
 *   {prefix}lock:{tenantId}   a random id of the replica refreshing, SET NX PX
 *
 * SECURITY: the token key holds a live bearer token for the tenant's data. Redis must
 * be private to the subgraph's replicas (no public network, AUTH/ACL restricted to
 * these key prefixes, TLS with rediss:// across untrusted networks). docs/upstream.md, "Shared token records", says so.
 *
 * Redis is an optimisation, not a dependency of serving: when it is down, `read`
 * answers null, `tryLock` answers a no-op release, and `write`/`discard` do nothing,
 * so each replica falls back to its own single flight (TokenCache's pending promise).
 * That single flight then holds per replica instead of across replicas, and every failure
 * is reported through `onError`.
 */

/** Which store operation failed; `connection` is the client losing Redis. */
export type RedisTokenStoreOperation = 'read' | 'write' | 'discard' | 'lock' | 'release' | 'connection';

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
  /** Prepended to every key, so several deployments can share one Redis. Default `wfs:`. */
  readonly keyPrefix?: string;
  /** Epoch milliseconds; the key TTL is `expiresAt - now()`. Default `Date.now`. */
  readonly now?: () => number;
  /**
   * Called when Redis fails and the store degrades to this replica's own tokens. The
   * error carries only a message and a code: never the command, its arguments or a token.
   */
  readonly onError?: (operation: RedisTokenStoreOperation, error: Error) => void;
}

/*
 * Compare and delete, in one round trip and atomically on the server: a replica whose
 * lock expired while it was still fetching must not delete the lock another replica
 * has taken since, and a replica that saw a 401 late must not delete the newer token
 * another replica has already written.
 */
const RELEASE_LOCK = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;
const DISCARD_TOKEN = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

/** A `SharedTokenStore` on Redis: share tokens and take the refresh lock across replicas. */
export class RedisTokenStore implements SharedTokenStore {
  private readonly keyPrefix: string;
  private readonly now: () => number;
  private readonly onError: RedisTokenStoreOptions['onError'];
  private readonly key: Buffer;
  private readonly apiBase: ApiBasePolicy;

  constructor(
    private readonly redis: Redis,
    options: RedisTokenStoreOptions,
  ) {
    this.key = recordKey(options.encryptionKey);
    this.apiBase = { allowList: options.apiBaseAllow ?? [], loopback: options.apiBaseLoopback ?? true };
    this.keyPrefix = options.keyPrefix ?? 'wfs:';
    this.now = options.now ?? Date.now;
    this.onError = options.onError;
  }

  async read(tenantId: string): Promise<TokenGrant | null> {
    let value: string | null;
    try {
      value = await this.redis.get(this.tokenKey(tenantId));
    } catch (error) {
      this.report('read', error);
      return null;
    }
    if (value === null) return null;
    // Whatever is in Redis came over the network from a store others can write to:
    // a record that does not open with our key, or whose token is not bound to this
    // tenant and its api_base, is no token at all (the cache then fetches its own).
    const grant = verifyRecord(openRecord(this.key, this.tokenKey(tenantId), value), tenantId, this.apiBase, this.now());
    if (!grant) this.report('read', new Error(`the shared token of tenant ${tenantId} is not a valid token record; ignoring it`));
    return grant;
  }

  async write(grant: TokenGrant): Promise<void> {
    // Math.floor: the key must be gone by expiresAt, never a millisecond after.
    const ttlMs = Math.floor(grant.expiresAt - this.now());
    if (!(ttlMs > 0)) return;
    const key = this.tokenKey(grant.tenantId);
    try {
      await this.redis.set(key, sealRecord(this.key, key, grant), 'PX', ttlMs);
    } catch (error) {
      this.report('write', error);
    }
  }

  async discard(tenantId: string, accessToken: string): Promise<void> {
    const key = this.tokenKey(tenantId);
    try {
      // The record is sealed, so the compare happens here and the delete on the
      // server only if the value is still the one we opened.
      const value = await this.redis.get(key);
      if (value === null) return;
      const record = openRecord(this.key, key, value) as { accessToken?: unknown } | null;
      if (record?.accessToken !== accessToken) return;
      await this.redis.eval(DISCARD_TOKEN, 1, key, value);
    } catch (error) {
      this.report('discard', error);
    }
  }

  async tryLock(tenantId: string, ttlMs: number): Promise<(() => Promise<void>) | null> {
    const key = this.lockKey(tenantId);
    // The id tells our lock from the one another replica took after ours expired.
    const id = randomUUID();
    let taken: string | null;
    try {
      taken = await this.redis.set(key, id, 'PX', Math.max(1, Math.ceil(ttlMs)), 'NX');
    } catch (error) {
      // Without Redis there is nobody to coordinate with: go ahead as if locked, and
      // TokenCache's per-process single flight keeps it to one request per replica.
      this.report('lock', error);
      return async () => undefined;
    }
    if (taken !== 'OK') return null;
    return async () => {
      try {
        await this.redis.eval(RELEASE_LOCK, 1, key, id);
      } catch (error) {
        // The lock then expires by itself after ttlMs.
        this.report('release', error);
      }
    };
  }

  /** For the readiness probe: true when Redis answers PING. Never throws. */
  async ping(): Promise<boolean> {
    try {
      return (await this.redis.ping()) === 'PONG';
    } catch {
      return false;
    }
  }

  private tokenKey(tenantId: string): string {
    return `${this.keyPrefix}token:${tenantId}`;
  }

  private lockKey(tenantId: string): string {
    return `${this.keyPrefix}lock:${tenantId}`;
  }

  private report(operation: RedisTokenStoreOperation, error: unknown): void {
    reportError(this.onError, operation, error);
  }
}

function reportError(onError: RedisTokenStoreOptions['onError'], operation: RedisTokenStoreOperation, error: unknown): void {
  if (!onError) return;
  try {
    onError(operation, sanitize(error));
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

  // Report the first error of each outage only: reconnect attempts would repeat it every 2 s.
  let down = false;
  redis.on('error', (error: unknown) => {
    if (down) return;
    down = true;
    reportError(options.onError, 'connection', error);
  });
  redis.on('ready', () => {
    down = false;
  });

  return {
    store,
    redis,
    close: async () => {
      if (typeof source === 'string') await connections.close();
    },
  };
}
