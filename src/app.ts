import type { JWTVerifyGetKey } from 'jose';
import type { Dispatcher } from 'undici';
import type { Config } from './config';
import type { ContextServices } from './graphql/context';
import { CursorCodec } from './graphql/cursor';
import { EntityIndexes } from './graphql/entityIndex';
import { createIdentityResolver } from './graphql/identity';
import type { Logger } from './logger';
import type { Metrics } from './metrics';
import { WfsClient } from './upstream/client';
import { createUpstreamAgent } from './upstream/http';
import type * as RedisTokenStoreModule from './upstream/redisTokenStore';
import { TokenCache } from './upstream/tokenCache';
import { requestToken } from './upstream/tokenEndpoint';

/** What tests and the demo may hand in instead of the production parts. */
export interface AppOverrides {
  readonly dispatcher?: Dispatcher;
  readonly now?: () => number;
  /** Demo mode: the tenant of a request that names none. */
  readonly defaultTenant?: string;
  /** Verified-identity mode: keys to verify with instead of fetching WFS_JWKS_URL. */
  readonly jwks?: JWTVerifyGetKey;
}

/** The wired REST side and the per-request context services, plus what must be closed. */
export interface App {
  readonly services: ContextServices;
  readonly tokens: TokenCache;
  /** Whether the shared token store answers (null without Redis); informational, see `/ready`. */
  sharedStoreUp(): Promise<boolean | null>;
  /**
   * Waits (at most `timeoutMs`) for the shared store's first connection, so the first
   * requests after start-up already share tokens with the other replicas. Resolves
   * false when Redis is not reachable yet: the replica then starts on its own tokens.
   */
  connectSharedStore(timeoutMs?: number): Promise<boolean>;
  close(): Promise<void>;
}

/** A token request that takes longer fails (within a GraphQL request's 15 s budget); the refresh lock (30 s) outlives it. */
const TOKEN_REQUEST_TIMEOUT_MS = 8_000;

export function createApp(config: Config, logger: Logger, metrics: Metrics, overrides: AppOverrides = {}): App {
  const authUrl = config.authUrl;
  if (!authUrl) throw new Error('createApp needs config.authUrl (demo mode fills it from the embedded emulator)');
  const ownsDispatcher = !overrides.dispatcher;
  const dispatcher = overrides.dispatcher ?? createUpstreamAgent();
  // ioredis is loaded only when Redis is configured: most deployments and every
  // cold start without WFS_REDIS_URL skip its module graph.
  const redis = config.redisUrl
    ? (require('./upstream/redisTokenStore') as typeof RedisTokenStoreModule).createRedisTokenStore(config.redisUrl, {
        onError: (operation, error) => logger.warn({ operation, err: error.message }, 'shared token store unavailable; using this replica\'s own tokens'),
      })
    : undefined;

  const tokens = new TokenCache({
    tenants: config.tenants,
    store: redis?.store,
    ...(overrides.now && { now: overrides.now }),
    fetchToken: (tenant) =>
      requestToken(tenant, {
        authUrl,
        dispatcher,
        apiBaseAllow: config.apiBaseAllow,
        signal: AbortSignal.timeout(TOKEN_REQUEST_TIMEOUT_MS),
        ...(overrides.now && { now: overrides.now }),
      }),
    onTokenRequest: (tenantId, outcome) => {
      metrics.tokenRequests.inc({ outcome });
      if (outcome === 'ok') logger.debug({ tenantId }, 'token obtained');
      else if (outcome === 'UPSTREAM_MISCONFIGURED' || outcome === 'UPSTREAM_UNAUTHORIZED') {
        logger.error({ tenantId, code: outcome }, 'configuration error: the token for this tenant was refused or is unusable; check WFS_TENANTS_FILE and WFS_API_BASE_ALLOW');
      } else logger.warn({ tenantId, code: outcome }, 'token request failed');
    },
  });

  const client = new WfsClient({
    tokens,
    dispatcher,
    onListCall: (list, status, durationMs) => {
      metrics.upstreamRequests.inc({ list, status: String(status) });
      metrics.upstreamDuration.observe({ list }, durationMs / 1000);
    },
  });

  const services: ContextServices = {
    client,
    cursors: new CursorCodec(config.cursorSecret),
    indexes: new EntityIndexes(overrides.now),
    identify: createIdentityResolver({
      jwt: config.jwt,
      tenantHeader: config.tenantHeader,
      defaultTenant: overrides.defaultTenant,
      isConfigured: (tenantId) => tokens.hasTenant(tenantId),
      ...(overrides.jwks && { jwks: overrides.jwks }),
    }),
  };

  return {
    services,
    tokens,
    sharedStoreUp: async () => (redis ? redis.store.ping() : null),
    async connectSharedStore(timeoutMs = 3_000) {
      if (!redis || redis.redis.status === 'ready') return true;
      const connection = redis.redis;
      return new Promise<boolean>((resolve) => {
        const done = (ok: boolean) => {
          clearTimeout(timer);
          connection.off('ready', onReady);
          resolve(ok);
        };
        const onReady = () => done(true);
        const timer = setTimeout(() => done(false), timeoutMs);
        connection.on('ready', onReady);
      });
    },
    async close() {
      await redis?.close();
      if (ownsDispatcher) await dispatcher.close();
    },
  };
}
