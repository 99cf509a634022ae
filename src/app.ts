import type { JWTVerifyGetKey } from 'jose';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Dispatcher } from 'undici';
import type { Config } from './config';
import type { ContextServices } from './graphql/data/context';
import { CursorCodec } from './graphql/data/cursor';
import { EntityIndexes } from './upstream/reading/entityIndexes';
import { MemoryBudget } from './memory/budget';
import { createIdentityResolver } from './graphql/admission/identity';
import type { Observer } from './upstream/observer';
import type { Logger } from './observability/logger';
import type { Metrics } from './observability/metrics';
import { redisDropLog, REJECTED_RECORD_REASONS } from './observability/redisDrops';
import { WfsClient, type WfsClientOptions } from './upstream/client';
import { DEFAULT_TIMEOUTS, createUpstreamAgent } from './upstream/transport/http';
import type * as RedisConnectionModule from './upstream/redis/connection';
import type * as RedisTokenStoreModule from './upstream/token/redisTokenStore';
import { RESOURCES, ResourceSet } from './upstream/resources';
import { TokenCache } from './upstream/token/tokenCache';
import { requestToken } from './upstream/token/tokenEndpoint';
import { timeLimit } from './upstream/transport/timeLimit';
import { startTokenEndpointCheck, type TokenEndpointCheck, type TokenEndpointVerdict } from './upstream/token/tokenEndpointCheck';
import type { SharedTokenStore } from './upstream/token/sharedRefresh';

/** What tests and the demo may hand in instead of the production parts. */
export interface AppOverrides {
  readonly dispatcher?: Dispatcher;
  readonly now?: () => number;
  /** Demo mode: the tenant of a request that names none. */
  readonly defaultTenant?: string;
  /** Verified-identity mode: keys to verify with instead of fetching WFS_JWKS_URL. */
  readonly jwks?: JWTVerifyGetKey;
  /** Resilience tuning of the upstream client (tests: a short breaker pause). */
  readonly upstream?: Pick<WfsClientOptions, 'breaker' | 'retry' | 'bulkhead'>;
}

/** The wired REST side and the per-request context services, plus what must be closed. */
export interface App {
  readonly services: ContextServices;
  /**
   * The replica's memory budget (`WFS_ENTITY_INDEX_MAX_RECORDS`, memory/budget.ts): the
   * entity indexes are charged to it and reclaim for it; the live snapshots and the
   * answers kept whole are charged to it by the wiring.
   */
  readonly memoryBudget: MemoryBudget;
  readonly tokens: TokenCache;
  /** The replica's Redis connections (WFS_REDIS_URL), shared by the token store and live updates; closed by `close`. */
  readonly redis: RedisConnectionModule.RedisConnections | undefined;
  /** Whether the shared token store answers (null without Redis); informational, see `/ready`. */
  sharedStoreUp(): Promise<boolean | null>;
  /**
   * Waits (at most `timeoutMs`) for the shared store's first connection, so the first
   * requests after start-up already share tokens with the other replicas. Resolves
   * false when Redis is not reachable yet: the replica then starts on its own tokens.
   */
  connectSharedStore(timeoutMs?: number): Promise<boolean>;
  /** What keeps this replica from being ready (a token endpoint that does not answer like one yet), or undefined. */
  readinessProblem(): string | undefined;
  close(): Promise<void>;
}

/** A token request that takes longer fails (within a GraphQL request's 15 s budget); the refresh lock (30 s) outlives it. */
const TOKEN_REQUEST_TIMEOUT_MS = 8_000;

/**
 * Wires the REST side and the per-request services; `observer` (observability/index.ts)
 * is what the client, the token cache and the data layer report to.
 */
export function createApp(config: Config, logger: Logger, metrics: Metrics, observer: Observer, overrides: AppOverrides = {}): App {
  const authUrl = config.authUrl;
  if (!authUrl) throw new Error('createApp needs config.authUrl (demo mode fills it from the embedded emulator)');
  const ownsDispatcher = !overrides.dispatcher;
  // Data calls go where a token's api_base says, so their connections are guarded
  // (private networks refused, at connect time); the token endpoint is the operator's
  // own WFS_AUTH_URL and may well live on a private network.
  // The client ends each attempt at WFS_UPSTREAM_ATTEMPT_TIMEOUT_MS; undici's own timeouts must not end it sooner.
  const attemptTimeouts = { ...DEFAULT_TIMEOUTS, headersMs: config.upstreamAttemptTimeoutMs, bodyMs: config.upstreamAttemptTimeoutMs };
  const dispatcher = overrides.dispatcher ?? createUpstreamAgent(attemptTimeouts, { allowList: config.apiBaseAllow, loopback: config.apiBaseLoopback });
  const authDispatcher = overrides.dispatcher ?? createUpstreamAgent();
  // ioredis is loaded only when Redis is configured: most deployments and every cold
  // start without WFS_REDIS_URL skip its module graph.
  const connections = config.redisUrl ? (require('./upstream/redis/connection') as typeof RedisConnectionModule).connectRedis(config.redisUrl) : undefined;
  const redis = connections ? sharedTokenStore(connections, config, logger, metrics, overrides) : undefined;
  const tokenEndpoint = startTokenEndpointCheck({ authUrl, dispatcher: authDispatcher, onVerdict: tokenEndpointLogger(logger) });

  const tokens = tokenCacheOf(config, { authUrl, dispatcher: authDispatcher, store: redis?.store, tokenEndpoint, logger, observer, overrides });

  const client = new WfsClient({
    tokens,
    dispatcher,
    observer,
    callBudget: config.upstreamCallBudget,
    attemptTimeoutMs: config.upstreamAttemptTimeoutMs,
    shardRetryAfterMaxSeconds: config.shardRetryAfterMaxSeconds,
    tenantRetryAfterMaxSeconds: config.tenantRetryAfterMaxSeconds,
    ...(overrides.now && { now: overrides.now }),
    ...overrides.upstream,
  });

  const memoryBudget = new MemoryBudget(config.entityIndexMaxRecords);
  const services: ContextServices = {
    client,
    cursors: new CursorCodec(config.cursorSecret),
    indexes: new EntityIndexes({
      budget: memoryBudget,
      ttlMs: config.entityIndexTtlSeconds * 1000,
      afterLargeRelease: collectGarbage,
      observer,
      ...(overrides.now && { now: overrides.now }),
    }),
    resources: new ResourceSet(RESOURCES),
    observer,
    freshnessMs: config.freshnessSeconds * 1000,
    identify: createIdentityResolver({
      jwt: config.jwt,
      tenantHeader: config.tenantHeader,
      defaultTenant: overrides.defaultTenant,
      onDefaultTenant: once(() =>
        logger.warn({ tenantId: overrides.defaultTenant, header: config.tenantHeader }, `demo mode: a request named no tenant and was answered for the first demo company (extensions.demoTenant says so); send the "${config.tenantHeader}" header`),
      ),
      isConfigured: (tenantId) => tokens.hasTenant(tenantId),
      ...(overrides.jwks && { jwks: overrides.jwks }),
      jwksOptions: {
        onStale: (error, ageMs) =>
          logger.warn({ err: error instanceof Error ? error.message : String(error), keySetAgeSeconds: Math.round(ageMs / 1000) }, 'WFS_JWKS_URL failed; verifying tokens with the last key set fetched (kept up to 1 h while the identity provider is down)'),
      },
    }),
  };

  return {
    services,
    memoryBudget,
    tokens,
    redis: connections,
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
    readinessProblem: () => tokenEndpoint.problem(),
    async close() {
      services.indexes.close();
      tokenEndpoint.close();
      redis?.closing();
      await connections?.close();
      if (ownsDispatcher) await Promise.all([dispatcher.close(), authDispatcher.close()]);
    },
  };
}

/**
 * The token cache on the token endpoint (`authUrl`), shared through Redis when
 * configured; a real token from the endpoint settles the start-up check.
 */
function tokenCacheOf(
  config: Config,
  parts: { authUrl: string; dispatcher: Dispatcher; store: SharedTokenStore | undefined; tokenEndpoint: TokenEndpointCheck; logger: Logger; observer: Observer; overrides: AppOverrides },
): TokenCache {
  const { authUrl, dispatcher, tokenEndpoint, logger, overrides } = parts;
  return new TokenCache({
    tenants: config.tenants,
    store: parts.store,
    ...(overrides.now && { now: overrides.now }),
    fetchToken: (tenant) => {
      // A time limit released with the request (AbortSignal.timeout would stay armed,
      // and keep its request's handlers, for the whole 8 s after every token request).
      const limit = timeLimit(TOKEN_REQUEST_TIMEOUT_MS);
      return requestToken(tenant, {
        authUrl,
        dispatcher,
        apiBaseAllow: config.apiBaseAllow,
        apiBaseLoopback: config.apiBaseLoopback,
        signal: limit.signal,
        ...(overrides.now && { now: overrides.now }),
      }).finally(limit.done).then((token) => {
        // A real token from the endpoint settles the start-up check, whatever it said.
        if (tokenEndpoint.problem() !== undefined) logger.info('a token came from the token endpoint: ready');
        tokenEndpoint.confirmed();
        return token;
      });
    },
    observer: parts.observer,
  });
}

/**
 * The shared token store on the replica's Redis connections, and what it tells the
 * metrics and the logs. `wfs_shared_token_store_up` follows whether Redis answers (the
 * connection and each command), not what is stored: a refused record is counted by
 * reason and logged once per key and reason every 5 minutes (observability/redisDrops.ts),
 * in words that say what it is. An outage writes one line when it starts and one when Redis is back.
 */
function sharedTokenStore(connections: RedisConnectionModule.RedisConnections, config: Config, logger: Logger, metrics: Metrics, overrides: AppOverrides) {
  const gauge = { store: 'redis' } as const;
  const rejectedLog = redisDropLog(logger, overrides.now);
  let closing = false;
  let outage = false;
  for (const reason of REJECTED_RECORD_REASONS) metrics.sharedTokenStoreRejected.inc({ reason }, 0);
  const handle = (require('./upstream/token/redisTokenStore') as typeof RedisTokenStoreModule).createRedisTokenStore(connections, {
    encryptionKey: config.redisKey ?? '',
    keyPrefix: config.redisKeyPrefix,
    apiBaseAllow: config.apiBaseAllow,
    apiBaseLoopback: config.apiBaseLoopback,
    ...(overrides.now && { now: overrides.now }),
    onDown: (operation, error) => {
      metrics.sharedTokenStoreUp.set(gauge, 0);
      if (closing) return;
      outage = true;
      logger.warn({ operation, err: error.message }, "shared token store unavailable: Redis does not answer; using this replica's own tokens until it does");
    },
    onUp: () => {
      metrics.sharedTokenStoreUp.set(gauge, 1);
      if (outage) logger.info('shared token store: Redis is back; sharing tokens with the other replicas again');
      outage = false;
    },
    onRejected: (reason, key) => {
      metrics.sharedTokenStoreRejected.inc({ reason });
      rejectedLog.tokenRecordRejected(reason, key);
    },
  });
  metrics.sharedTokenStoreUp.set(gauge, handle.store.availability.up ? 1 : 0);
  return {
    ...handle,
    /** The wiring closes the connections: their close is no outage. */
    closing: () => {
      closing = true;
    },
  };
}

/**
 * Asks V8 for a major collection, run incrementally (`execution: 'async'`, so no long
 * pause), after the entity indexes released much at once. V8 collects when it needs
 * room, so an idle replica would otherwise keep what the indexes let go as garbage, and
 * its heap would look as full as when it was busy. `gc` is V8's own, fetched once the
 * way jest-leak-detector does.
 */
function collectGarbage(): void {
  gcFunction ??= (() => {
    setFlagsFromString('--expose-gc');
    return runInNewContext('gc') as GcFunction;
  })();
  gcFunction({ type: 'major', execution: 'async' });
}

type GcFunction = (options: { type: 'major'; execution: 'async' }) => void;
let gcFunction: GcFunction | undefined;

/** Logs the start-up check's verdicts: each new problem once, and the moment it is right after one. */
function tokenEndpointLogger(logger: Logger): (verdict: TokenEndpointVerdict) => void {
  let lastProblem: string | undefined;
  return (verdict) => {
    if (!verdict.ok) {
      if (verdict.problem !== lastProblem) logger.error({ tokenUrl: verdict.url }, `${verdict.problem} (/ready answers 503 until it answers like a token endpoint)`);
      lastProblem = verdict.problem;
    } else {
      // The check stops once right: this line is the moment the replica turns ready.
      logger.info({ tokenUrl: verdict.url, status: verdict.status }, lastProblem === undefined ? 'token endpoint answers like one: ready' : 'token endpoint answers like one now: ready');
      lastProblem = undefined;
    }
  };
}

function once(action: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    action();
  };
}
