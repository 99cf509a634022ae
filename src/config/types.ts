import type { Limits } from './limits';

/** One company's client credentials, from WFS_TENANTS_FILE. */
export interface TenantCredentials {
  readonly tenantId: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** Space-separated scopes to request, e.g. `shifts.read`. */
  readonly scope: string;
}

export interface JwtIdentityConfig {
  readonly jwksUrl: string;
  readonly issuer: string;
  /** Undefined only with WFS_JWT_NO_AUDIENCE=true (warned at start). */
  readonly audience: string | undefined;
  readonly tenantClaim: string;
}

/** The whole configuration, read once from the environment and frozen. */
export interface Config {
  readonly port: number;
  readonly host: string;
  /** Unset: demo mode, on the embedded emulator (asked for; see `demo`). */
  readonly authUrl: string | null;
  /** Demo mode: no WFS_AUTH_URL, outside production or with WFS_DEMO=true. */
  readonly demo: boolean;
  /** NODE_ENV=production. */
  readonly production: boolean;
  readonly tenants: readonly TenantCredentials[];
  readonly tenantHeader: string;
  readonly jwt: JwtIdentityConfig | null;
  readonly routerSecret: string | null;
  /** WFS_TRUSTED_NETWORK=true: production trusted-header mode without a router secret, asked for (warned at start). */
  readonly trustedNetwork: boolean;
  readonly redisUrl: string | null;
  /** Encrypts the token records in Redis; set whenever `redisUrl` is. */
  readonly redisKey: string | null;
  /** WFS_REDIS_KEY_PREFIX: begins every Redis key and channel the subgraph uses (token records, refresh locks, live leases and messages); default `wfs:`. */
  readonly redisKeyPrefix: string;
  readonly cursorSecret: Buffer;
  /** True when WFS_CURSOR_SECRET was not set and a random one was drawn. */
  readonly cursorSecretGenerated: boolean;
  readonly apiBaseAllow: readonly string[];
  /** A loopback api_base is accepted without WFS_API_BASE_ALLOW naming it: outside production, and in demo mode. */
  readonly apiBaseLoopback: boolean;
  /** Serve the browser explorer at `/` (default: on unless NODE_ENV=production). */
  readonly explorer: boolean;
  /** Answer introspection queries (default: on unless NODE_ENV=production). */
  readonly introspection: boolean;
  readonly logLevel: string;
  /** WFS_UPSTREAM_CALL_BUDGET: upstream page calls one GraphQL request may make. */
  readonly upstreamCallBudget: number;
  /** WFS_UPSTREAM_ATTEMPT_TIMEOUT_MS: how long one upstream HTTP attempt may take. */
  readonly upstreamAttemptTimeoutMs: number;
  /** WFS_SHARD_RETRY_AFTER_MAX_S: the longest shard (503) Retry-After window kept. */
  readonly shardRetryAfterMaxSeconds: number;
  /** WFS_TENANT_RETRY_AFTER_MAX_S: the longest tenant (429) Retry-After window kept. */
  readonly tenantRetryAfterMaxSeconds: number;
  /** WFS_ENTITY_INDEX_MAX_RECORDS: records all tenants' entity indexes may hold together. */
  readonly entityIndexMaxRecords: number;
  /** WFS_ENTITY_INDEX_TTL_SECONDS: how long an entity index answers from what it has seen. */
  readonly entityIndexTtlSeconds: number;
  /** WFS_POLL_INTERVAL_SECONDS: how often a list with live subscribers is polled, before jitter (default 15, at least 1). */
  readonly pollIntervalSeconds: number;
  /** WFS_DRAIN_SECONDS: after SIGTERM, how long the replica answers `/ready` 503 and keeps serving (with `Connection: close`) before it stops accepting connections (default 5). */
  readonly drainSeconds: number;
  /** WFS_FRESHNESS_SECONDS: how far behind the upstream an answer may be (docs/caching.md); 0: every list read goes upstream, answers `no-store`. */
  readonly freshnessSeconds: number;
  /** WFS_CACHE_INVALIDATION_URLS: gateways' invalidation endpoints (Apollo Router's format) told of the changes the pollers see. */
  readonly cacheInvalidationUrls: readonly string[];
  /** WFS_CACHE_INVALIDATION_KEY: sent to them as `Authorization`; set whenever the URLs are. */
  readonly cacheInvalidationKey: string | null;
  /** WFS_SUBSCRIPTION_CALLBACK_ALLOW: the origins a router's subscription callback URL may name (http/liveCallback.ts); empty: callback subscriptions refused. */
  readonly subscriptionCallbackAllow: readonly string[];
  /** Every bound, the `WFS_*` settings over DEFAULT_LIMITS (`Limits`); `limits.query.maxCost` is WFS_MAX_COST's. */
  readonly limits: Limits;
}
