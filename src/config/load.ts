import { randomBytes } from 'node:crypto';
import { closest } from 'fastest-levenshtein';
import { ConfigError } from './errors';
import { DEFAULT_LIMITS, withLimits, type LimitOverrides, type Limits } from './limits';
import { nonEmpty } from './readers';
import { KNOWN_ENV_VARIABLES, SETTINGS, UPSTREAM_SETTINGS, type SettingName } from './settings';
import type { IntegerSetting, Setting } from './spec';
import { readTenantsFile } from './tenantsFile';
import type { Config, JwtIdentityConfig } from './types';

type Env = Readonly<Record<string, string | undefined>>;

/** A setting's value once read: what its reader returns, or its fallback. */
type ValueOf<Name extends SettingName> = (typeof SETTINGS)[Name] extends Setting<infer T> ? T : never;

/** One setting of the environment: its fallback when unset or blank, else what its reader makes of the text (or its ConfigError). */
type Read = <Name extends SettingName>(name: Name) => ValueOf<Name>;

/**
 * Why a table of our own and no schema library (zod, envalid): envalid's spec per
 * variable is what settings.ts is, but every reader would stay a custom validator (each
 * message names the variable, the value seen and what to do), and neither library does
 * the rest: the closest-name check of unknown `WFS_*` names (envalid's strict mode
 * guards reads, not names present), the docs table, the settings of bounds laid over
 * DEFAULT_LIMITS, and the rules between variables below (demo mode against upstream
 * settings, Redis and its key, what production requires).
 */

/**
 * Reads the subgraph's settings from the environment: every `WFS_*` variable, `PORT`,
 * `HOST`, `LOG_LEVEL` and `NODE_ENV`. Every check happens here, up front, so a bad
 * value stops start-up with a line that names the variable. (The other readers of
 * `process.env` are OpenTelemetry's switch and SDK for `OTEL_*`, the compile cache and
 * the heap-limit check: docs/configuration.md, "How settings are read".)
 */
export function loadConfig(env: Env = process.env): Config {
  checkNames(env);
  const read = reader(env);
  const isSet = (name: SettingName) => nonEmpty(env[name]) !== undefined;
  const { authUrl, demo, production } = mode(read, isSet);
  const cursorSecretText = read('WFS_CURSOR_SECRET');
  const logLevel = read('LOG_LEVEL');
  const routerSecret = read('WFS_ROUTER_SECRET');
  const redis = redisSettings(read, isSet);
  // Replicas (Redis says there are several) must share the key, or each refuses the others' cursors.
  if (cursorSecretText === undefined && (redis.redisUrl || (production && !demo))) {
    throw new ConfigError('WFS_CURSOR_SECRET', `is required ${redis.redisUrl ? 'with WFS_REDIS_URL' : 'with NODE_ENV=production'}: every replica must seal cursors with the same key (for example \`openssl rand -hex 32\`)`);
  }
  const jwt = jwtConfig(read, isSet);
  const trustedNetwork = read('WFS_TRUSTED_NETWORK');
  // A published port (the image listens on 0.0.0.0) must not let anyone name any tenant in a header.
  if (production && !demo && !jwt && routerSecret === null && !trustedNetwork) {
    throw new ConfigError('WFS_ROUTER_SECRET', "is required with NODE_ENV=production in trusted-header mode, or anyone who reaches the port reads any tenant: set it to the router's secret, use WFS_JWKS_URL, or set WFS_TRUSTED_NETWORK=true if only the router can reach this port");
  }
  const freshnessSeconds = read('WFS_FRESHNESS_SECONDS');
  const limits = limitsOf(read);
  const tenantsFile = read('WFS_TENANTS_FILE');
  const config: Config = {
    port: read('PORT'),
    host: read('HOST'),
    authUrl,
    demo,
    production,
    tenants: authUrl && tenantsFile ? readTenantsFile(tenantsFile) : [],
    tenantHeader: read('WFS_TENANT_HEADER'),
    jwt,
    routerSecret,
    trustedNetwork,
    ...redis,
    cursorSecret: cursorSecretText ? Buffer.from(cursorSecretText, 'utf8') : randomBytes(32),
    cursorSecretGenerated: cursorSecretText === undefined,
    apiBaseAllow: read('WFS_API_BASE_ALLOW'),
    apiBaseLoopback: !production || demo,
    explorer: read('WFS_EXPLORER') ?? !production,
    introspection: read('WFS_INTROSPECTION') ?? !production,
    logLevel,
    upstreamCallBudget: read('WFS_UPSTREAM_CALL_BUDGET'),
    upstreamAttemptTimeoutMs: read('WFS_UPSTREAM_ATTEMPT_TIMEOUT_MS'),
    shardRetryAfterMaxSeconds: read('WFS_SHARD_RETRY_AFTER_MAX_S'),
    tenantRetryAfterMaxSeconds: read('WFS_TENANT_RETRY_AFTER_MAX_S'),
    entityIndexMaxRecords: read('WFS_ENTITY_INDEX_MAX_RECORDS'),
    entityIndexTtlSeconds: entityIndexTtl(read, isSet, freshnessSeconds),
    pollIntervalSeconds: read('WFS_POLL_INTERVAL_SECONDS'),
    drainSeconds: read('WFS_DRAIN_SECONDS'),
    freshnessSeconds,
    ...cacheInvalidation(read),
    subscriptionCallbackAllow: read('WFS_SUBSCRIPTION_CALLBACK_ALLOW'),
    limits,
  };
  return Object.freeze(config);
}

function reader(env: Env): Read {
  return <Name extends SettingName>(name: Name): ValueOf<Name> => {
    const spec = SETTINGS[name] as Setting<ValueOf<Name>>;
    const text = nonEmpty(env[name]);
    return text === undefined ? spec.fallback : spec.read(text, name);
  };
}

/** An unknown `WFS_*` name is a typo until proven otherwise: stop, and name the closest known one. */
function checkNames(env: Env): void {
  for (const name of Object.keys(env)) {
    if (!name.startsWith('WFS_') || (KNOWN_ENV_VARIABLES as readonly string[]).includes(name)) continue;
    throw new ConfigError(name, `is not a known setting; did you mean ${closest(name, [...KNOWN_ENV_VARIABLES])}?`);
  }
}

/** Demo mode or a real upstream, and production or not: demo mode must be asked for, and takes no upstream setting. */
function mode(read: Read, isSet: (name: SettingName) => boolean): { authUrl: string | null; demo: boolean; production: boolean } {
  const authUrl = read('WFS_AUTH_URL');
  const demo = authUrl === null;
  const production = read('NODE_ENV') === 'production';
  if (demo) {
    const upstreamSetting = UPSTREAM_SETTINGS.find(isSet);
    if (upstreamSetting) {
      throw new ConfigError('WFS_AUTH_URL', `is not set but ${upstreamSetting} is; set WFS_AUTH_URL to the identity provider (demo mode takes no upstream settings)`);
    }
    if (production && !read('WFS_DEMO')) {
      throw new ConfigError('WFS_AUTH_URL', 'is required with NODE_ENV=production (set WFS_DEMO=true to run the demo on the embedded emulator on purpose)');
    }
  } else if (read('WFS_DEMO')) {
    throw new ConfigError('WFS_DEMO', 'is true but WFS_AUTH_URL is set; demo mode runs without an upstream');
  }
  if (authUrl && !isSet('WFS_TENANTS_FILE')) {
    throw new ConfigError('WFS_TENANTS_FILE', 'required when WFS_AUTH_URL is set (a JSON array of { tenantId, clientId, clientSecret, scope })');
  }
  return { authUrl, demo, production };
}

/** WFS_REDIS_URL with its key (both or neither) and its key prefix (only with it). */
function redisSettings(read: Read, isSet: (name: SettingName) => boolean): Pick<Config, 'redisUrl' | 'redisKey' | 'redisKeyPrefix'> {
  const redisUrl = read('WFS_REDIS_URL');
  const redisKey = read('WFS_REDIS_KEY');
  if (redisUrl && redisKey === null) {
    throw new ConfigError('WFS_REDIS_KEY', 'is required with WFS_REDIS_URL: it encrypts the tokens kept in Redis (for example `openssl rand -hex 32`)');
  }
  if (!redisUrl && redisKey !== null) throw new ConfigError('WFS_REDIS_KEY', 'is set but WFS_REDIS_URL is not');
  const redisKeyPrefix = read('WFS_REDIS_KEY_PREFIX');
  if (!redisUrl && isSet('WFS_REDIS_KEY_PREFIX')) throw new ConfigError('WFS_REDIS_KEY_PREFIX', 'is set but WFS_REDIS_URL is not');
  return { redisUrl, redisKey, redisKeyPrefix };
}

/** Verified-identity mode: WFS_JWKS_URL with an issuer and an audience (or its explicit opt-out); the other JWT settings only with it. */
function jwtConfig(read: Read, isSet: (name: SettingName) => boolean): JwtIdentityConfig | null {
  const jwksUrl = read('WFS_JWKS_URL');
  if (!jwksUrl) {
    for (const name of ['WFS_JWT_ISSUER', 'WFS_JWT_AUDIENCE', 'WFS_JWT_NO_AUDIENCE', 'WFS_TENANT_CLAIM'] as const) {
      if (isSet(name)) throw new ConfigError(name, 'is set but WFS_JWKS_URL is not; set WFS_JWKS_URL to use verified-identity mode');
    }
    return null;
  }
  const issuer = read('WFS_JWT_ISSUER');
  if (issuer === undefined) throw new ConfigError('WFS_JWT_ISSUER', 'is required with WFS_JWKS_URL: only tokens from this issuer are accepted');
  const audience = read('WFS_JWT_AUDIENCE');
  const noAudience = read('WFS_JWT_NO_AUDIENCE');
  if (audience === undefined && !noAudience) {
    throw new ConfigError('WFS_JWT_AUDIENCE', 'is required with WFS_JWKS_URL, so a token issued for another application is refused (set WFS_JWT_NO_AUDIENCE=true for a provider that issues none)');
  }
  if (audience !== undefined && noAudience) throw new ConfigError('WFS_JWT_NO_AUDIENCE', 'is true but WFS_JWT_AUDIENCE is set; use one of them');
  return { jwksUrl, issuer, audience, tenantClaim: read('WFS_TENANT_CLAIM') };
}

/** The bounds: each setting of a bound (its `bound` in settings.ts) laid over DEFAULT_LIMITS, in the bound's unit. */
function limitsOf(read: Read): Limits {
  const overrides: Partial<Record<keyof Limits, Record<string, number>>> = {};
  for (const name of Object.keys(SETTINGS) as SettingName[]) {
    const { bound } = SETTINGS[name] as Partial<IntegerSetting>;
    if (bound === undefined) continue;
    const [group, field] = bound.name;
    (overrides[group] ??= {})[field] = (read(name) as number) * bound.perUnit;
  }
  return withLimits(DEFAULT_LIMITS, overrides as LimitOverrides);
}

/**
 * The entity index's lifetime follows the freshness window: what it holds is served
 * through `location(id:)`, `node`, `Shift.location` and `_entities`, and the pages a
 * company reads again are kept in it, so one lifetime bounds every way of reading a
 * record (docs/caching.md). WFS_ENTITY_INDEX_TTL_SECONDS, if set, can only shorten it;
 * with the window at 0 it is the index's lifetime, as before the window existed.
 */
function entityIndexTtl(read: Read, isSet: (name: SettingName) => boolean, freshnessSeconds: number): number {
  const ttl = read('WFS_ENTITY_INDEX_TTL_SECONDS');
  if (freshnessSeconds === 0) return ttl;
  return Math.min(isSet('WFS_ENTITY_INDEX_TTL_SECONDS') ? ttl : freshnessSeconds, freshnessSeconds);
}

/** WFS_CACHE_INVALIDATION_URLS and its key: both or neither. */
function cacheInvalidation(read: Read): Pick<Config, 'cacheInvalidationUrls' | 'cacheInvalidationKey'> {
  const urls = read('WFS_CACHE_INVALIDATION_URLS');
  const key = read('WFS_CACHE_INVALIDATION_KEY');
  if (urls.length > 0 && key === null) throw new ConfigError('WFS_CACHE_INVALIDATION_KEY', "is required with WFS_CACHE_INVALIDATION_URLS: the gateways' shared invalidation key, sent as Authorization");
  if (urls.length === 0 && key !== null) throw new ConfigError('WFS_CACHE_INVALIDATION_KEY', 'is set but WFS_CACHE_INVALIDATION_URLS is not');
  return { cacheInvalidationUrls: urls, cacheInvalidationKey: key };
}
