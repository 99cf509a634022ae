import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { closest } from 'fastest-levenshtein';
import ipaddr from 'ipaddr.js';

/**
 * Every `WFS_*` variable this subgraph reads. Any other `WFS_*` name in the environment
 * stops start-up, naming the closest of these (a typo such as `WFS_AUTH_ULR` must not
 * silently start demo mode). Add a new variable here, in the settings table of
 * docs/configuration.md (test/unit/docs.test.ts holds the two equal), and where it is read.
 */
export const KNOWN_ENV_VARIABLES = [
  'WFS_AUTH_URL',
  'WFS_TENANTS_FILE',
  'WFS_TENANT_HEADER',
  'WFS_JWKS_URL',
  'WFS_JWT_ISSUER',
  'WFS_JWT_AUDIENCE',
  'WFS_JWT_NO_AUDIENCE',
  'WFS_TENANT_CLAIM',
  'WFS_ROUTER_SECRET',
  'WFS_REDIS_URL',
  'WFS_REDIS_KEY',
  'WFS_REDIS_KEY_PREFIX',
  'WFS_CURSOR_SECRET',
  'WFS_API_BASE_ALLOW',
  'WFS_EXPLORER',
  'WFS_DEMO',
  'WFS_INTROSPECTION',
  'WFS_UPSTREAM_CALL_BUDGET',
  'WFS_MAX_COST',
  'WFS_TRUSTED_NETWORK',
  'WFS_UPSTREAM_ATTEMPT_TIMEOUT_MS',
  'WFS_SHARD_RETRY_AFTER_MAX_S',
  'WFS_TENANT_RETRY_AFTER_MAX_S',
  'WFS_ENTITY_INDEX_MAX_RECORDS',
  'WFS_ENTITY_INDEX_TTL_SECONDS',
  'WFS_POLL_INTERVAL_SECONDS',
  'WFS_POLL_CALLS_PER_SECOND',
  'WFS_LIVE_ADDRESS_STRIKES',
  'WFS_LIVE_ADDRESS_BLOCK_SECONDS',
  'WFS_MAX_REQUESTS_IN_FLIGHT',
  'WFS_REQUEST_BODY_TIMEOUT_MS',
  'WFS_LIVE_CONNECTIONS_PER_ADDRESS',
  'WFS_MAX_CONNECTIONS',
  'WFS_MAX_CONNECTIONS_PER_ADDRESS',
  'WFS_HEADERS_TIMEOUT_MS',
  'WFS_DRAIN_SECONDS',
  'WFS_FRESHNESS_SECONDS',
  'WFS_CACHE_INVALIDATION_URLS',
  'WFS_CACHE_INVALIDATION_KEY',
] as const;

/**
 * The numeric settings: default and largest value (the smallest is 1). The one place
 * their defaults are written: loadConfig applies them, the modules that take these
 * values as options fall back to them, and test/unit/docs.test.ts holds
 * docs/configuration.md to them.
 */
export const NUMERIC_SETTINGS = {
  WFS_UPSTREAM_CALL_BUDGET: { default: 200, max: 10_000 },
  WFS_MAX_COST: { default: 50_000, max: 1_000_000_000 },
  WFS_UPSTREAM_ATTEMPT_TIMEOUT_MS: { default: 8_000, max: 15_000 },
  WFS_SHARD_RETRY_AFTER_MAX_S: { default: 60, max: 3_600 },
  WFS_TENANT_RETRY_AFTER_MAX_S: { default: 300, max: 86_400 },
  WFS_ENTITY_INDEX_MAX_RECORDS: { default: 200_000, max: 100_000_000 },
  WFS_ENTITY_INDEX_TTL_SECONDS: { default: 30, max: 3_600 },
  WFS_POLL_INTERVAL_SECONDS: { default: 15, max: 3_600 },
  WFS_POLL_CALLS_PER_SECOND: { default: 50, max: 100_000 },
  WFS_LIVE_ADDRESS_STRIKES: { default: 20, max: 1_000_000 },
  WFS_LIVE_ADDRESS_BLOCK_SECONDS: { default: 30, max: 3_600 },
  WFS_MAX_REQUESTS_IN_FLIGHT: { default: 2_000, max: 100_000 },
  WFS_REQUEST_BODY_TIMEOUT_MS: { default: 5_000, max: 60_000 },
  WFS_LIVE_CONNECTIONS_PER_ADDRESS: { default: 500, max: 20_000 },
  WFS_MAX_CONNECTIONS: { default: 25_000, max: 1_000_000 },
  WFS_MAX_CONNECTIONS_PER_ADDRESS: { default: 1_000, max: 1_000_000 },
  WFS_HEADERS_TIMEOUT_MS: { default: 10_000, max: 60_000 },
  // As long as node:http's keep-alive timeout (5 s, server.ts's listen): by the end of the
  // drain every kept-alive connection has carried a `Connection: close` answer or been
  // idle that long and closed as at any other time, so stopping cuts no idle connection.
  WFS_DRAIN_SECONDS: { default: 5, max: 300 },
} as const satisfies Partial<Record<(typeof KNOWN_ENV_VARIABLES)[number], { readonly default: number; readonly max: number }>>;

/** Variables that only make sense against a real upstream: with any of them, a missing WFS_AUTH_URL is a mistake, not demo mode. */
export const UPSTREAM_SETTINGS = ['WFS_TENANTS_FILE', 'WFS_REDIS_URL', 'WFS_REDIS_KEY', 'WFS_REDIS_KEY_PREFIX', 'WFS_JWKS_URL', 'WFS_JWT_ISSUER', 'WFS_JWT_AUDIENCE', 'WFS_JWT_NO_AUDIENCE', 'WFS_TENANT_CLAIM', 'WFS_API_BASE_ALLOW'] as const;

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
  /** WFS_MAX_COST: the largest estimated answer an operation may ask for (src/graphql/admission/cost.ts). Defaults: NUMERIC_SETTINGS. */
  readonly maxCost: number;
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
  /** WFS_POLL_CALLS_PER_SECOND: upstream page calls all of a replica's live polls may make per second together; past it, intervals stretch (default 50). */
  readonly pollCallsPerSecond: number;
  /** WFS_LIVE_ADDRESS_STRIKES: WebSocket connections from one address closed for misbehaving within 10 s before its upgrades are refused (default 20). */
  readonly liveAddressStrikes: number;
  /** WFS_LIVE_ADDRESS_BLOCK_SECONDS: how long such an address's upgrades are refused (429, Retry-After; default 30). */
  readonly liveAddressBlockSeconds: number;
  /** WFS_MAX_REQUESTS_IN_FLIGHT: GraphQL requests one replica serves at once (default 2 000); one client address may hold a quarter (http/requestBounds.ts). */
  readonly maxRequestsInFlight: number;
  /** WFS_REQUEST_BODY_TIMEOUT_MS: how long a request body may take to arrive whole before it is dropped (408; default 5 000). */
  readonly requestBodyTimeoutMs: number;
  /** WFS_LIVE_CONNECTIONS_PER_ADDRESS: open WebSocket connections from one client address, an IPv6 address by its /64 (default 500, a fortieth of the replica's 20 000). */
  readonly liveConnectionsPerAddress: number;
  /** WFS_MAX_CONNECTIONS: open sockets of one replica, HTTP and WebSocket together (Node's `server.maxConnections`; default 25 000). */
  readonly maxConnections: number;
  /** WFS_MAX_CONNECTIONS_PER_ADDRESS: open sockets of one client address not known to be the router's (default 1 000; http/requestBounds.ts). */
  readonly maxConnectionsPerAddress: number;
  /** WFS_HEADERS_TIMEOUT_MS: how long a request's headers may take to arrive whole (408 and closed past it; default 10 000). */
  readonly headersTimeoutMs: number;
  /** WFS_DRAIN_SECONDS: after SIGTERM, how long the replica answers `/ready` 503 and keeps serving (with `Connection: close`) before it stops accepting connections (default 5). */
  readonly drainSeconds: number;
  /** WFS_FRESHNESS_SECONDS: how far behind the upstream an answer may be (docs/caching.md); 0: every list read goes upstream, answers `no-store`. */
  readonly freshnessSeconds: number;
  /** WFS_CACHE_INVALIDATION_URLS: gateways' invalidation endpoints (Apollo Router's format) told of the changes the pollers see. */
  readonly cacheInvalidationUrls: readonly string[];
  /** WFS_CACHE_INVALIDATION_KEY: sent to them as `Authorization`; set whenever the URLs are. */
  readonly cacheInvalidationKey: string | null;
}

/**
 * The default of WFS_FRESHNESS_SECONDS, and its largest value. 0 by default: clients
 * write to the REST API directly and read through us, and an operator who has not
 * chosen a window must not find that a read right after a write answers what was there
 * before it (docs/caching.md, "The default"). Choosing one is a line of configuration.
 */
export const FRESHNESS_SECONDS = { default: 0, max: 3_600 } as const;

/** A configuration problem: `index.ts` prints the message as one line and exits 1. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`${variable}: ${problem}`);
  }
}

/** The one line a failed start-up prints to stderr before it exits 1 (main.ts): a ConfigError says itself, anything else is a start-up failure. */
export function startupFailureLine(error: unknown): string {
  const message = error instanceof ConfigError ? error.message : `start-up failed: ${error instanceof Error ? error.message : String(error)}`;
  return `wfs-subgraph: ${message}\n`;
}

type Env = Readonly<Record<string, string | undefined>>;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/**
 * Why no schema library (zod, envalid): of this file's lines (346 before the settings table), the per-variable
 * parsers are about 110 (`secret` … `redisUrl` below), and each would stay a custom
 * refinement, since every message names the variable, the value seen and what to do;
 * what is left is cross-variable rules (demo mode against upstream settings, Redis and
 * its key, what production requires) and the closest-name check of unknown `WFS_*`
 * names, which neither library does (envalid's strict mode guards reads, not names
 * present). The tenants file's shape (`readTenantsFile`, 30 lines) is the one place a
 * schema would fit; alone it does not pay for a new dependency.
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
  const authUrl = optionalUrl(env, 'WFS_AUTH_URL');
  const tenantsFile = nonEmpty(env.WFS_TENANTS_FILE);
  const demo = authUrl === null;
  if (demo) {
    const upstreamSetting = UPSTREAM_SETTINGS.find((name) => nonEmpty(env[name]) !== undefined);
    if (upstreamSetting) {
      throw new ConfigError('WFS_AUTH_URL', `is not set but ${upstreamSetting} is; set WFS_AUTH_URL to the identity provider (demo mode takes no upstream settings)`);
    }
    if (env.NODE_ENV === 'production' && !flag(env, 'WFS_DEMO', false)) {
      throw new ConfigError('WFS_AUTH_URL', 'is required with NODE_ENV=production (set WFS_DEMO=true to run the demo on the embedded emulator on purpose)');
    }
  } else if (flag(env, 'WFS_DEMO', false)) {
    throw new ConfigError('WFS_DEMO', 'is true but WFS_AUTH_URL is set; demo mode runs without an upstream');
  }
  if (authUrl && !tenantsFile) {
    throw new ConfigError('WFS_TENANTS_FILE', 'required when WFS_AUTH_URL is set (a JSON array of { tenantId, clientId, clientSecret, scope })');
  }
  const production = env.NODE_ENV === 'production';
  const cursorSecretText = secret(env, 'WFS_CURSOR_SECRET', 32);
  const logLevel = nonEmpty(env.LOG_LEVEL) ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}`);
  }
  const routerSecret = secret(env, 'WFS_ROUTER_SECRET', 16) ?? null;
  const redis = redisUrl(env.WFS_REDIS_URL);
  const redisKey = secret(env, 'WFS_REDIS_KEY', 32) ?? null;
  if (redis && redisKey === null) {
    throw new ConfigError('WFS_REDIS_KEY', 'is required with WFS_REDIS_URL: it encrypts the tokens kept in Redis (for example `openssl rand -hex 32`)');
  }
  if (!redis && redisKey !== null) throw new ConfigError('WFS_REDIS_KEY', 'is set but WFS_REDIS_URL is not');
  const redisKeyPrefix = keyPrefix(env.WFS_REDIS_KEY_PREFIX);
  if (!redis && redisKeyPrefix !== undefined) throw new ConfigError('WFS_REDIS_KEY_PREFIX', 'is set but WFS_REDIS_URL is not');
  // Replicas (Redis says there are several) must share the key, or each refuses the others' cursors.
  if (cursorSecretText === undefined && (redis || (production && !demo))) {
    throw new ConfigError('WFS_CURSOR_SECRET', `is required ${redis ? 'with WFS_REDIS_URL' : 'with NODE_ENV=production'}: every replica must seal cursors with the same key (for example \`openssl rand -hex 32\`)`);
  }
  const jwt = jwtConfig(env);
  const trustedNetwork = flag(env, 'WFS_TRUSTED_NETWORK', false);
  // A published port (the image listens on 0.0.0.0) must not let anyone name any tenant in a header.
  if (production && !demo && !jwt && routerSecret === null && !trustedNetwork) {
    throw new ConfigError('WFS_ROUTER_SECRET', "is required with NODE_ENV=production in trusted-header mode, or anyone who reaches the port reads any tenant: set it to the router's secret, use WFS_JWKS_URL, or set WFS_TRUSTED_NETWORK=true if only the router can reach this port");
  }
  const freshnessSeconds = freshness(env);
  const config: Config = {
    port: port(env.PORT),
    host: nonEmpty(env.HOST) ?? '127.0.0.1',
    authUrl,
    demo,
    production,
    tenants: authUrl && tenantsFile ? readTenantsFile(tenantsFile) : [],
    tenantHeader: (nonEmpty(env.WFS_TENANT_HEADER) ?? 'x-tenant-id').toLowerCase(),
    jwt,
    routerSecret,
    trustedNetwork,
    redisUrl: redis,
    redisKey: redis ? redisKey : null,
    redisKeyPrefix: redisKeyPrefix ?? 'wfs:',
    cursorSecret: cursorSecretText ? Buffer.from(cursorSecretText, 'utf8') : randomBytes(32),
    cursorSecretGenerated: cursorSecretText === undefined,
    apiBaseAllow: apiBaseAllow(env.WFS_API_BASE_ALLOW),
    apiBaseLoopback: !production || demo,
    explorer: flag(env, 'WFS_EXPLORER', env.NODE_ENV !== 'production'),
    introspection: flag(env, 'WFS_INTROSPECTION', env.NODE_ENV !== 'production'),
    logLevel,
    upstreamCallBudget: positiveInteger(env, 'WFS_UPSTREAM_CALL_BUDGET'),
    maxCost: positiveInteger(env, 'WFS_MAX_COST'),
    upstreamAttemptTimeoutMs: positiveInteger(env, 'WFS_UPSTREAM_ATTEMPT_TIMEOUT_MS'),
    shardRetryAfterMaxSeconds: positiveInteger(env, 'WFS_SHARD_RETRY_AFTER_MAX_S'),
    tenantRetryAfterMaxSeconds: positiveInteger(env, 'WFS_TENANT_RETRY_AFTER_MAX_S'),
    entityIndexMaxRecords: positiveInteger(env, 'WFS_ENTITY_INDEX_MAX_RECORDS'),
    entityIndexTtlSeconds: entityIndexTtl(env, freshnessSeconds),
    pollIntervalSeconds: positiveInteger(env, 'WFS_POLL_INTERVAL_SECONDS'),
    pollCallsPerSecond: positiveInteger(env, 'WFS_POLL_CALLS_PER_SECOND'),
    liveAddressStrikes: positiveInteger(env, 'WFS_LIVE_ADDRESS_STRIKES'),
    liveAddressBlockSeconds: positiveInteger(env, 'WFS_LIVE_ADDRESS_BLOCK_SECONDS'),
    maxRequestsInFlight: positiveInteger(env, 'WFS_MAX_REQUESTS_IN_FLIGHT'),
    requestBodyTimeoutMs: positiveInteger(env, 'WFS_REQUEST_BODY_TIMEOUT_MS'),
    liveConnectionsPerAddress: positiveInteger(env, 'WFS_LIVE_CONNECTIONS_PER_ADDRESS'),
    maxConnections: positiveInteger(env, 'WFS_MAX_CONNECTIONS'),
    maxConnectionsPerAddress: positiveInteger(env, 'WFS_MAX_CONNECTIONS_PER_ADDRESS'),
    headersTimeoutMs: positiveInteger(env, 'WFS_HEADERS_TIMEOUT_MS'),
    drainSeconds: positiveInteger(env, 'WFS_DRAIN_SECONDS'),
    freshnessSeconds,
    ...cacheInvalidation(env),
  };
  return Object.freeze(config);
}

/** An unknown `WFS_*` name is a typo until proven otherwise: stop, and name the closest known one. */
function checkNames(env: Env): void {
  for (const name of Object.keys(env)) {
    if (!name.startsWith('WFS_') || (KNOWN_ENV_VARIABLES as readonly string[]).includes(name)) continue;
    throw new ConfigError(name, `is not a known setting; did you mean ${closest(name, [...KNOWN_ENV_VARIABLES])}?`);
  }
}

/** The placeholder the deploy examples ship (exactly 32 characters, so the length check alone passes it). */
const PLACEHOLDER_SECRETS = ['replace-with-openssl-rand-hex-32'];
/** Fewer distinct characters than this is a made-up secret, not a random one (`openssl rand -hex 32` gives about 16). */
const MIN_DISTINCT_SECRET_CHARACTERS = 8;

/** A secret setting: at least `minLength` characters, and not a placeholder or a made-up string. */
function secret(env: Env, name: string, minLength: number): string | undefined {
  const value = nonEmpty(env[name]);
  if (value === undefined) return undefined;
  const problem =
    value.length < minLength ? `must be at least ${minLength} characters`
    : PLACEHOLDER_SECRETS.includes(value.toLowerCase()) || /replace[-_ ]?(me|with)|change[-_ ]?me/i.test(value) ? 'is still the example placeholder'
    : new Set(value).size < MIN_DISTINCT_SECRET_CHARACTERS ? 'has too little variety to be a random secret'
    : undefined;
  if (problem) throw new ConfigError(name, `${problem}; set a random value (for example \`openssl rand -hex 32\`)`);
  return value;
}

function apiBaseAllow(value: string | undefined): string[] {
  const entries = (nonEmpty(value) ?? '').split(',').map((s) => s.trim().toLowerCase()).filter(Boolean);
  for (const entry of entries) {
    const valid = entry.includes('/') ? ipaddr.isValidCIDR(entry) : /^(\*\.)?[a-z0-9.[\]:-]+$/.test(entry);
    if (!valid) throw new ConfigError('WFS_API_BASE_ALLOW', `"${entry.slice(0, 80)}" is not a host, *.suffix, host:port or CIDR range`);
  }
  return entries;
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed ? trimmed : undefined;
}

function port(value: string | undefined): number {
  const text = nonEmpty(value);
  if (text === undefined) return 4001;
  const n = Number(text);
  if (!/^\d+$/.test(text) || n > 65535) throw new ConfigError('PORT', `must be a port number from 0 to 65535, got "${text}"`);
  return n;
}

function positiveInteger(env: Env, name: keyof typeof NUMERIC_SETTINGS): number {
  const { default: fallback, max } = NUMERIC_SETTINGS[name];
  const text = nonEmpty(env[name]);
  if (text === undefined) return fallback;
  if (!/^\d+$/.test(text) || Number(text) < 1 || Number(text) > max) throw new ConfigError(name, `must be an integer from 1 to ${max}, got "${text}"`);
  return Number(text);
}

/** WFS_FRESHNESS_SECONDS: 0 (today's behaviour: nothing kept) up to FRESHNESS_SECONDS.max. */
function freshness(env: Env): number {
  const text = nonEmpty(env.WFS_FRESHNESS_SECONDS);
  if (text === undefined) return FRESHNESS_SECONDS.default;
  if (!/^\d+$/.test(text) || Number(text) > FRESHNESS_SECONDS.max) throw new ConfigError('WFS_FRESHNESS_SECONDS', `must be an integer from 0 to ${FRESHNESS_SECONDS.max}, got "${text}"`);
  return Number(text);
}

/**
 * The entity index's lifetime follows the freshness window: what it holds is served
 * through `location(id:)`, `node`, `Shift.location` and `_entities`, and the pages a
 * company reads again are kept in it, so one lifetime bounds every way of reading a
 * record (docs/caching.md). WFS_ENTITY_INDEX_TTL_SECONDS, if set, can only shorten it;
 * with the window at 0 it is the index's lifetime, as before the window existed.
 */
function entityIndexTtl(env: Env, freshnessSeconds: number): number {
  const explicit = nonEmpty(env.WFS_ENTITY_INDEX_TTL_SECONDS) === undefined ? undefined : positiveInteger(env, 'WFS_ENTITY_INDEX_TTL_SECONDS');
  if (freshnessSeconds === 0) return explicit ?? NUMERIC_SETTINGS.WFS_ENTITY_INDEX_TTL_SECONDS.default;
  return Math.min(explicit ?? freshnessSeconds, freshnessSeconds);
}

/** WFS_CACHE_INVALIDATION_URLS and its key: both or neither. */
function cacheInvalidation(env: Env): { cacheInvalidationUrls: string[]; cacheInvalidationKey: string | null } {
  const urls = (nonEmpty(env.WFS_CACHE_INVALIDATION_URLS) ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  for (const text of urls) {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw new ConfigError('WFS_CACHE_INVALIDATION_URLS', `"${text.slice(0, 80)}" is not an absolute http(s) URL`);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ConfigError('WFS_CACHE_INVALIDATION_URLS', `"${text.slice(0, 80)}" must be an http(s) URL`);
    if (url.username || url.password) throw new ConfigError('WFS_CACHE_INVALIDATION_URLS', 'must not carry credentials in a URL (the key goes in WFS_CACHE_INVALIDATION_KEY)');
  }
  const key = secret(env, 'WFS_CACHE_INVALIDATION_KEY', 16) ?? null;
  if (urls.length > 0 && key === null) throw new ConfigError('WFS_CACHE_INVALIDATION_KEY', "is required with WFS_CACHE_INVALIDATION_URLS: the gateways' shared invalidation key, sent as Authorization");
  if (urls.length === 0 && key !== null) throw new ConfigError('WFS_CACHE_INVALIDATION_KEY', 'is set but WFS_CACHE_INVALIDATION_URLS is not');
  return { cacheInvalidationUrls: urls, cacheInvalidationKey: key };
}

function flag(env: Env, name: string, fallback: boolean): boolean {
  const text = nonEmpty(env[name])?.toLowerCase();
  if (text === undefined) return fallback;
  if (['1', 'true', 'yes', 'on'].includes(text)) return true;
  if (['0', 'false', 'no', 'off'].includes(text)) return false;
  throw new ConfigError(name, `must be true or false, got "${text}"`);
}

function optionalUrl(env: Env, name: string): string | null {
  const text = nonEmpty(env[name]);
  if (text === undefined) return null;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError(name, `must be an absolute http(s) URL, got "${text}"`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ConfigError(name, 'must be an http(s) URL');
  // Client secrets go to WFS_AUTH_URL and tenant identities come from WFS_JWKS_URL:
  // neither may cross a network in clear text.
  if (url.protocol === 'http:' && !isLoopbackHostname(url.hostname)) throw new ConfigError(name, 'must be https (plain http only on a loopback host)');
  if (url.username || url.password) throw new ConfigError(name, 'must not carry credentials in the URL');
  return text.replace(/\/+$/, '');
}

function isLoopbackHostname(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host === '::1') return true;
  return isIP(host) === 4 && host.startsWith('127.');
}

function redisUrl(value: string | undefined): string | null {
  const text = nonEmpty(value);
  if (text === undefined) return null;
  if (!/^rediss?:\/\//.test(text)) throw new ConfigError('WFS_REDIS_URL', 'must start with redis:// or rediss://');
  return text;
}

/**
 * WFS_REDIS_KEY_PREFIX: letters, digits and `_.:-`, at most 64. No glob characters
 * (`*?[]`), so an ACL key pattern (`~<prefix>*`) or a SCAN MATCH names exactly one
 * deployment's keys.
 */
function keyPrefix(value: string | undefined): string | undefined {
  const text = nonEmpty(value);
  if (text === undefined) return undefined;
  if (!/^[A-Za-z0-9_.:-]{1,64}$/.test(text)) throw new ConfigError('WFS_REDIS_KEY_PREFIX', `must be 1 to 64 letters, digits or _.:- (for example "wfs-blue:"), got "${text.slice(0, 80)}"`);
  return text;
}

function jwtConfig(env: Env): JwtIdentityConfig | null {
  const jwksUrl = optionalUrl(env, 'WFS_JWKS_URL');
  if (!jwksUrl) {
    for (const name of ['WFS_JWT_ISSUER', 'WFS_JWT_AUDIENCE', 'WFS_JWT_NO_AUDIENCE', 'WFS_TENANT_CLAIM']) {
      if (nonEmpty(env[name])) throw new ConfigError(name, 'is set but WFS_JWKS_URL is not; set WFS_JWKS_URL to use verified-identity mode');
    }
    return null;
  }
  const issuer = nonEmpty(env.WFS_JWT_ISSUER);
  if (issuer === undefined) throw new ConfigError('WFS_JWT_ISSUER', 'is required with WFS_JWKS_URL: only tokens from this issuer are accepted');
  const audience = nonEmpty(env.WFS_JWT_AUDIENCE);
  const noAudience = flag(env, 'WFS_JWT_NO_AUDIENCE', false);
  if (audience === undefined && !noAudience) {
    throw new ConfigError('WFS_JWT_AUDIENCE', 'is required with WFS_JWKS_URL, so a token issued for another application is refused (set WFS_JWT_NO_AUDIENCE=true for a provider that issues none)');
  }
  if (audience !== undefined && noAudience) throw new ConfigError('WFS_JWT_NO_AUDIENCE', 'is true but WFS_JWT_AUDIENCE is set; use one of them');
  return {
    jwksUrl,
    issuer,
    audience,
    tenantClaim: nonEmpty(env.WFS_TENANT_CLAIM) ?? 'tenant_id',
  };
}

function readTenantsFile(path: string): TenantCredentials[] {
  const fail = (problem: string): never => {
    throw new ConfigError('WFS_TENANTS_FILE', `${path}: ${problem}`);
  };
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return fail(code ? `cannot read the file (${code})` : 'is not valid JSON');
  }
  if (!Array.isArray(parsed) || parsed.length === 0) return fail('must be a non-empty JSON array of { tenantId, clientId, clientSecret, scope }');
  const seen = new Set<string>();
  return parsed.map((entry: unknown, index) => {
    const item = (typeof entry === 'object' && entry !== null ? entry : {}) as Record<string, unknown>;
    const field = (name: string, required: boolean): string => {
      const value = item[name];
      if (!required && (value === undefined || value === '')) return '';
      if (typeof value !== 'string' || value.trim() === '') return fail(`entry ${index}: "${name}" must be a non-empty string`);
      return value.trim();
    };
    const tenant = {
      tenantId: field('tenantId', true),
      clientId: field('clientId', true),
      clientSecret: field('clientSecret', true),
      scope: field('scope', false).split(/\s+/).filter(Boolean).join(' '),
    };
    if (seen.has(tenant.tenantId)) fail(`entry ${index}: tenantId "${tenant.tenantId}" appears twice`);
    seen.add(tenant.tenantId);
    return Object.freeze(tenant);
  });
}
