/**
 * One token request per company across replicas (docs/upstream.md, "Token lifetime"):
 * where replicas share tokens (`SharedTokenStore`, Redis in production), a replica takes
 * a usable shared token, or takes the refresh lock and asks the endpoint itself, or
 * waits on the replica that holds the lock, and never longer than a token request may
 * take. Without a store, each process keeps its own tokens, which is right for a single
 * replica.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { TokenGrant } from './tokenEndpoint';

/** Where replicas share tokens (redisTokenStore.ts). */
export interface SharedTokenStore {
  read(tenantId: string): Promise<TokenGrant | null>;
  write(grant: TokenGrant): Promise<void>;
  /** Removes the tenant's token only if it is still `accessToken` (compare and delete). */
  discard(tenantId: string, accessToken: string): Promise<void>;
  /** Takes the cross-replica refresh lock (or takes over one no replica wrote); returns its release, or null while another replica holds it. */
  tryLock(tenantId: string, ttlMs: number): Promise<(() => Promise<void>) | null>;
}

/** How a replica waits on another's refresh (the token cache's options, with their defaults here). */
export interface SharedRefreshOptions {
  /** How long, in ms, a replica waits for another replica's refresh before it fetches alone. Default 10 000. */
  readonly lockWaitMs?: number;
  /**
   * How long, in ms, the cross-replica refresh lock lives if its holder dies. It must
   * outlast the slowest token request (see `TOKEN_REQUEST_TIMEOUT_MS`). Default 30 000.
   */
  readonly lockTtlMs?: number;
  /** Poll interval, in ms, while waiting on another replica. Default 50. */
  readonly lockPollMs?: number;
}

/** One company's refresh through the store: whether a shared token will do instead (`takes`), and the token request itself (`fetch`). */
export interface SharedRefresh {
  readonly tenantId: string;
  takes(grant: TokenGrant): boolean;
  fetch(): Promise<TokenGrant>;
  /** The cache's clock (epoch ms). */
  now(): number;
}

/** A token for `refresh.tenantId`: a shared one it `takes`, else one fetched under the refresh lock (and shared), else, once the wait is over, one fetched alone. */
export async function refreshThroughStore(store: SharedTokenStore, refresh: SharedRefresh, options: SharedRefreshOptions): Promise<TokenGrant> {
  const { tenantId } = refresh;
  const deadline = refresh.now() + (options.lockWaitMs ?? 10_000);
  for (;;) {
    const shared = await store.read(tenantId);
    if (shared && refresh.takes(shared)) return shared;
    const release = await store.tryLock(tenantId, options.lockTtlMs ?? 30_000);
    if (release) {
      try {
        // Double-check: another replica may have written a token just before we locked.
        const again = await store.read(tenantId);
        if (again && refresh.takes(again)) return again;
        const grant = await refresh.fetch();
        // A store that fails to keep the token must not cost us the token itself.
        await store.write(grant).catch(() => undefined);
        return grant;
      } finally {
        await release().catch(() => undefined);
      }
    }
    if (refresh.now() >= deadline) {
      // No token came within the wait, longer than a token request may take
      // (TOKEN_REQUEST_TIMEOUT_MS): the holder died, or the lock is not a replica's
      // at all (a sealed one put back by someone who can write to Redis). Fetch
      // alone, once, rather than fail: a lock in Redis must never lock a company out.
      const grant = await refresh.fetch();
      await store.write(grant).catch(() => undefined);
      return grant;
    }
    await delay(options.lockPollMs ?? 50);
  }
}
