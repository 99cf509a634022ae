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
  'WFS_LIVE_FILTERS_PER_COMPANY',
  'WFS_MAX_CONNECTIONS',
  'WFS_MAX_CONNECTIONS_PER_ADDRESS',
  'WFS_HEADERS_TIMEOUT_MS',
  'WFS_DRAIN_SECONDS',
  'WFS_FRESHNESS_SECONDS',
  'WFS_CACHE_INVALIDATION_URLS',
  'WFS_CACHE_INVALIDATION_KEY',
] as const;

/**
 * Every bound of the subgraph, by the room that checks it: what one connection,
 * request, document, WebSocket, subscription or company may hold or cause. Built once
 * by `loadConfig` (the `WFS_*` settings over DEFAULT_LIMITS) and frozen; `startServer`
 * takes a partial of it per group (`ServerOptions.limits`, tests lower bounds) and
 * hands each room its group. Adding a bound is one field here (its default, unit and
 * reason in DEFAULT_LIMITS), the check that reads it from its group, and its refusal
 * reason (graphql/admission/refusals.ts); a setting for it is one entry in
 * KNOWN_ENV_VARIABLES and NUMERIC_SETTINGS and one line in `limitsOf`. docs/limits.md
 * says what each bound protects.
 */
export interface Limits {
  /** Sockets before any request is read (http/requestBounds.ts, `boundConnections`). */
  readonly connection: ConnectionLimits;
  /** A GraphQL request over HTTP before any GraphQL work (http/requestBounds.ts, `boundRequests`). */
  readonly request: RequestLimits;
  /** What one document may ask for, queries and subscriptions alike (graphql/admission/limits.ts and cost.ts). */
  readonly query: QueryLimits;
  /** The WebSocket transport (http/liveSocket.ts, liveMessages.ts) and its upgrade admission (graphql/admission/upgradeGate.ts, addressGuard.ts). */
  readonly socket: SocketLimits;
  /** The subscribe gate (graphql/admission/subscribeGate.ts, variableBytes.ts). */
  readonly gate: GateLimits;
  /** The live hub's subscriptions and filters (live/hub.ts). */
  readonly live: LiveLimits;
  /** What live polling may cost the upstream (live/pollBudget.ts). */
  readonly poll: PollLimits;
}

/** A partial of `Limits`, group by group (ServerOptions.limits): each bound given replaces its default or setting. */
export type LimitOverrides = { readonly [Group in keyof Limits]?: Partial<Limits[Group]> };

export interface ConnectionLimits {
  /** Open sockets of the replica, HTTP and WebSocket together (Node's `server.maxConnections`; `WFS_MAX_CONNECTIONS`). */
  readonly maxConnections: number;
  /** Open sockets of one client address not (yet) known to be the router's (`WFS_MAX_CONNECTIONS_PER_ADDRESS`). */
  readonly connectionsPerAddress: number;
  /** How long a request's headers may take to arrive whole, in ms (Node's `headersTimeout`; `WFS_HEADERS_TIMEOUT_MS`). */
  readonly headersTimeoutMs: number;
  /** How long a whole request may take to arrive, in ms (Node's `requestTimeout`). */
  readonly requestTimeoutMs: number;
  /** How long a kept-alive connection may stay idle between requests, in ms (Node's `keepAliveTimeout`). */
  readonly keepAliveTimeoutMs: number;
}

export interface RequestLimits {
  /** GraphQL requests one replica serves at once; past it 503 (`WFS_MAX_REQUESTS_IN_FLIGHT`). */
  readonly inFlight: number;
  /** The largest request body, in bytes; past it 413 and the connection closed. */
  readonly bodyBytes: number;
  /** The most JSON values, objects, arrays and keys one body may hold (its structural units, memory/jsonSize.ts); past it 413 and the connection closed. */
  readonly bodyValues: number;
  /** Bytes the bodies of the requests in flight may hold together, counted as parsed (memory/jsonSize.ts: text and parse); past it 503. */
  readonly bufferedBodyBytes: number;
  /** The share of `inFlight` and `bufferedBodyBytes` one client address may hold (0 to 1); past it 429. */
  readonly addressShare: number;
  /** How long a body may take to arrive whole once its headers are in, in ms; past it 408 (`WFS_REQUEST_BODY_TIMEOUT_MS`). */
  readonly bodyTimeoutMs: number;
  /** How long a written answer may take to leave, in ms; past it the connection is destroyed. */
  readonly writeTimeoutMs: number;
  /** The upstream time one GraphQL request (or one change of a subscription) may use, all its pages together, in ms. */
  readonly budgetMs: number;
}

/**
 * What one GraphQL document may ask for. Every field counts, introspection fields
 * (`__typename`, `__type`, `__schema` and everything under them) included; the only
 * thing kept apart is the subtree of a real `__schema`/`__type` root field, which is
 * measured against its own, looser depth bound instead of the data depth (GraphiQL's
 * and GraphQL Code Generator's introspection queries nest `ofType` about nine levels
 * deep). A fragment is never exempt because of its name.
 */
export interface QueryLimits {
  /** Nesting of data fields, counted in fields, through fragments. */
  readonly maxDepth: number;
  /** Nesting inside a `__schema`/`__type` root field, counted from the root field. */
  readonly maxIntrospectionDepth: number;
  /** Aliased fields per operation, fragments counted once per spread. */
  readonly maxAliases: number;
  /** Directives in the whole document. */
  readonly maxDirectives: number;
  /** Fields per operation once every fragment spread is expanded (1 per field). */
  readonly maxFields: number;
  /** Estimated size of an operation's answer, page sizes multiplied through (cost.ts); checked once variables are known (`WFS_MAX_COST`). */
  readonly maxCost: number;
  /** Lexical tokens in the document; enforced by graphql-js while parsing. */
  readonly maxTokens: number;
}

export interface SocketLimits {
  /** Open WebSocket connections on the replica; past it an upgrade is answered 503. */
  readonly connections: number;
  /**
   * Open connections from one client address (an IPv6 address by its /64; the router
   * secret exempt, and with a secret set every accepted upgrade carries it); past it
   * an upgrade is answered 429 (`WFS_LIVE_CONNECTIONS_PER_ADDRESS`).
   */
  readonly connectionsPerAddress: number;
  /** The largest message a client may send, in bytes (ws closes the connection with 1009 past it). */
  readonly messageBytes: number;
  /** The most JSON values, objects, arrays and keys one message may hold (its structural units, memory/jsonSize.ts); past it the connection is closed (1009). */
  readonly messageValues: number;
  /**
   * Bytes one connection's messages may hold, received but not yet handled, counted as
   * parsed (http/liveInbox.ts); past it the connection is not read until they drain.
   */
  readonly queuedBytes: number;
  /** Bytes the messages of all connections may hold so; past it a connection that sends more is not read until they drain. */
  readonly queuedBytesPerReplica: number;
  /** The longest subscription id, in characters (graphql-ws's own are 36-character UUIDs); a longer one closes the connection (4400). */
  readonly subscriptionIdChars: number;
  /** How long a connection may wait before its `connection_init`, in ms (then closed with 4408). */
  readonly connectionInitMs: number;
  /** Ping every this many ms; a connection that does not answer with a pong within as long again is terminated. */
  readonly keepAliveMs: number;
  /** Bytes a connection may have waiting to be sent (a client that does not read); past it, it is dropped. */
  readonly bufferedBytes: number;
  /** Messages a connection may send within `messageBurst / messagesPerSecond` seconds; past it, it is closed (1008). */
  readonly messageBurst: number;
  readonly messagesPerSecond: number;
  /**
   * Strikes one client address may earn within `addressWindowMs`: a connection
   * closed for a protocol violation or past a message or refusal bound earns 5, one
   * that ended before its `connection_init` was accepted (a refused identity, none in
   * time, a client that gave up) earns 1. Past it, upgrades from that address are
   * refused (429, Retry-After) for `addressBlockMs` (milliseconds, so tests see a block end in
   * a fraction of a second; WFS_LIVE_ADDRESS_BLOCK_SECONDS in production). An upgrade carrying the
   * router secret is not counted (the router has many users on one address, and
   * limits them itself). `WFS_LIVE_ADDRESS_STRIKES`.
   */
  readonly addressStrikes: number;
  readonly addressWindowMs: number;
  readonly addressBlockMs: number;
  /** A refused upgrade is answered after this pause, in ms (a client that ignores Retry-After waits anyway), at most `heldRefusals` at once. */
  readonly refusalDelayMs: number;
  readonly heldRefusals: number;
}

export interface GateLimits {
  /** Subscriptions open (or being set up) on one connection; past it a subscribe gets an error. */
  readonly subscriptionsPerConnection: number;
  /** Refused subscribes a connection may send; past it, it is closed (1008): a client that keeps asking past a bound is not a screen. */
  readonly refusalsPerConnection: number;
  /** New subscriptions one company may open on a replica within `companySubscribeBurst / companySubscribesPerSecond` seconds; past it a subscribe is refused (SERVICE_UNAVAILABLE). */
  readonly companySubscribeBurst: number;
  readonly companySubscribesPerSecond: number;
  /** How often the identity of a connection with open subscriptions is checked again, in ms (a JWT past `exp`, a key withdrawn). */
  readonly identityRecheckMs: number;
  /** The longest `connection_init` header identity reads, in characters; a longer one is not read. */
  readonly initHeaderChars: number;
  /**
   * Bytes of variables (the coerced values its operations declare, measured as their
   * JSON text) the open subscriptions of one connection, of one company on the replica,
   * and of the whole replica may keep; a subscribe past one is refused (BAD_USER_INPUT).
   */
  readonly variableBytesPerConnection: number;
  readonly variableBytesPerCompany: number;
  readonly variableBytesPerReplica: number;
}

export interface LiveLimits {
  /** Open subscriptions one company may hold on a replica. */
  readonly perCompany: number;
  /** Open subscriptions on a replica. */
  readonly perReplica: number;
  /** Changes waiting for one subscriber before it is dropped as a slow consumer. */
  readonly queuedChanges: number;
  /**
   * Distinct filters one company's open subscriptions may have on a replica (views; a
   * subscription with a filter already open joins its view). Matching no longer costs
   * views × changes, but each view is memory and a place in the index rebuilt when
   * views come and go; screens with the same window share one
   * (`WFS_LIVE_FILTERS_PER_COMPANY`).
   */
  readonly filtersPerCompany: number;
  /**
   * Companies' lists a replica watches for queries (live/watch.ts: a poller started
   * because the list is read often, not for subscribers). A company has one poller per
   * list at most, so its share is bounded by its lists already.
   */
  readonly watchedLists: number;
}

export interface PollLimits {
  /** Upstream page calls all of a replica's live polls may make per second together, shared max-min between companies; past it, intervals stretch (`WFS_POLL_CALLS_PER_SECOND`). */
  readonly callsPerSecond: number;
}

/**
 * The default of every bound, with its unit and reason: the one place they are written.
 * The `WFS_*` settings take their defaults from here (NUMERIC_SETTINGS), and rooms
 * built without the configuration (unit tests) fall back to their group.
 */
export const DEFAULT_LIMITS: Limits = deepFreeze({
  connection: {
    // The 20 000 WebSocket connections, the 2 000 requests in flight and room for idle
    // keep-alive connections and probes. At about 9 KB a socket that never finished its
    // headers, a full replica holds about 220 MB of them, for at most the header deadline.
    maxConnections: 25_000,
    // Twice one address's 500 requests in flight (the share of requests binds first); it
    // takes 25 addresses acting together to fill a replica.
    connectionsPerAddress: 1_000,
    // Node's default is 60 s, checked every 30 s: 15 000 sockets that never finished their
    // headers stayed about 30 s and added about 130 MB RSS.
    headersTimeoutMs: 10_000,
    // Node's default; a body has its own, shorter deadline (request.bodyTimeoutMs).
    requestTimeoutMs: 60_000,
    // Node's default, said once: WFS_DRAIN_SECONDS's default is as long (NUMERIC_SETTINGS).
    keepAliveTimeoutMs: 5_000,
  },
  request: {
    // Each request holds its context, its signal and timer, and its upstream wait: well
    // above what the autoscaler's target lets reach a replica, below what runs it out of
    // its 256 MiB heap.
    inFlight: 2_000,
    // A document of the largest shipped operation is a few KiB; a router sends no more.
    bodyBytes: 1024 * 1024,
    // A body's parse, not its bytes, is what a replica holds: 1 MiB of `{},` parses into
    // about 21 MiB. A router's largest body, an `_entities` batch, has about three units a
    // representation, and the cost bound (query.maxCost) refuses far fewer
    // representations than 100 000 / 3; at 64 bytes a unit this is at most 6.4 MB of parse.
    bodyValues: 100_000,
    // A body is read whole before it is parsed, and its text, its parsed JSON and a shared
    // request's key stay until the answer is out: slow clients each sending a body near
    // 1 MiB add up (400 of them took a replica to 472 MiB RSS, past the Kubernetes
    // example's 512Mi limit). A body counts what it holds once parsed (twice its bytes
    // and 64 bytes a structural unit: memory/jsonSize.ts), from its first chunk until its
    // response closes: 16 bodies of 1 MiB of `{},` from one address reached the heap
    // limit when bytes alone were counted.
    bufferedBodyBytes: 64 * 1024 * 1024,
    // A quarter (500 requests and 16 MiB of bodies by default) is about three times what a
    // replica at its autoscaling target serves in a second (171 requests per second,
    // docs/operations.md), so a gateway or a NAT without the router secret is not held
    // back at ordinary load, while no one address can fill either bound (about 200 sockets
    // holding nearly whole bodies, or 2 000 sending them slowly, did lock everyone out).
    addressShare: 1 / 4,
    // A router sends a whole document at once; 5 s is a 1 MiB body at 200 KiB/s. Without
    // it, 2 000 sockets each sending 9 of 10 body bytes held every slot until Node's 60 s
    // request timeout.
    bodyTimeoutMs: 5_000,
    // A client that stops reading would otherwise keep its buffered answer for ever.
    writeTimeoutMs: 30_000,
    // Below the router's subgraph timeout (20 s in router/router.yaml), so a slow upstream
    // ends in our UPSTREAM_UNAVAILABLE error, not in the router's generic timeout.
    budgetMs: 15_000,
  },
  // docs/limits.md, "Query limits", says what each counts; the shipped operations are far
  // below every one, introspection queries of GraphiQL and GraphQL Code Generator pass.
  query: {
    maxDepth: 12,
    maxIntrospectionDepth: 20,
    maxAliases: 30,
    maxDirectives: 50,
    maxFields: 20_000,
    // About 40 times the largest shipped operation, and one connection nested in another
    // at default page sizes (40 401); three nested at 100 (1 000 000) never pass.
    maxCost: 50_000,
    maxTokens: 5_000,
  },
  socket: {
    connections: 20_000,
    // A fortieth of the replica's: a NAT'd office's screens fit, and it takes 40 addresses
    // (or /64s) acting together to fill a replica, not one /64 or 20 IPv4 addresses.
    connectionsPerAddress: 500,
    messageBytes: 256 * 1024,
    // A subscribe is a query and a filter (tens of values), a connection_init a few
    // headers: 10 000 is far above both, and at most 640 KB once parsed.
    messageValues: 10_000,
    // Room for a message of the largest size being handled while the next arrives; a
    // connection that sends faster than its messages are handled waits (TCP's window),
    // instead of the replica holding what it sent (two connections' 900 subscribes of
    // 250 KB each held up to 450 MB before).
    queuedBytes: 1024 * 1024,
    queuedBytesPerReplica: 32 * 1024 * 1024,
    subscriptionIdChars: 128,
    connectionInitMs: 3_000,
    keepAliveMs: 12_000,
    bufferedBytes: 1024 * 1024,
    // 2 000 per 10 s, well above what a client or a gateway sends.
    messageBurst: 2_000,
    messagesPerSecond: 200,
    addressStrikes: 20,
    addressWindowMs: 10_000,
    addressBlockMs: 30_000,
    refusalDelayMs: 1_000,
    heldRefusals: 1_000,
  },
  gate: {
    // A gateway multiplexes a company's subscriptions over one connection (Hive Gateway
    // keeps one per caller identity), so this is well above one screen's few.
    subscriptionsPerConnection: 1_000,
    refusalsPerConnection: 100,
    companySubscribeBurst: 1_000,
    companySubscribesPerSecond: 100,
    identityRecheckMs: 30_000,
    // A JWT with many claims fits; with the three names identity reads, a connection
    // keeps at most 24 KiB of its `connection_init`.
    initHeaderChars: 8_192,
    // A subscription's variables are a filter (an id, two date-times: about 150 bytes),
    // so these leave 1 KiB to each of a connection's 1 000 subscriptions, 800 bytes to
    // each of a company's 5 000 and of the replica's 20 000: 16 MiB of the 256 MiB heap
    // at most, whatever clients send.
    variableBytesPerConnection: 1024 * 1024,
    variableBytesPerCompany: 4 * 1024 * 1024,
    variableBytesPerReplica: 16 * 1024 * 1024,
  },
  live: {
    perCompany: 5_000,
    perReplica: 20_000,
    queuedChanges: 1_000,
    // Keeps what the filters hold (memory, the index built again as they come and go)
    // small; matching a change costs its lookups and the subscribers it reaches, not the
    // filters (docs/limits.md, "Live updates").
    filtersPerCompany: 1_000,
    // At the default poll budget (50 calls a second) and interval (15 s), 750 one-page
    // lists fill the budget: 500 watched ones leave a third of it to subscriptions
    // before intervals stretch (docs/caching.md, "Watched lists").
    watchedLists: 500,
  },
  poll: {
    // At one page a list, a company's 2 lists polled every 15 s want 2/15 of a call a
    // second: 375 such companies poll a replica before any interval stretches.
    callsPerSecond: 50,
  },
});

/** `base` with `overrides` laid over it group by group, frozen (startServer: the configuration's limits and ServerOptions.limits). */
export function withLimits(base: Limits, overrides: LimitOverrides = {}): Limits {
  const merged = {} as Record<keyof Limits, object>;
  for (const group of Object.keys(base) as Array<keyof Limits>) merged[group] = { ...base[group], ...overrides[group] };
  return deepFreeze(merged as unknown as Limits);
}

function deepFreeze<T extends object>(value: T): T {
  for (const inner of Object.values(value)) if (typeof inner === 'object' && inner !== null) deepFreeze(inner as object);
  return Object.freeze(value);
}

/**
 * The numeric settings: default and largest value (the smallest is 1). The one place
 * their defaults are written (a bound's, in DEFAULT_LIMITS): loadConfig applies them, the
 * modules that take these values as options fall back to them, and
 * test/unit/docs.test.ts holds docs/configuration.md to them.
 */
export const NUMERIC_SETTINGS = {
  WFS_UPSTREAM_CALL_BUDGET: { default: 200, max: 10_000 },
  WFS_MAX_COST: { default: DEFAULT_LIMITS.query.maxCost, max: 1_000_000_000 },
  WFS_UPSTREAM_ATTEMPT_TIMEOUT_MS: { default: 8_000, max: 15_000 },
  WFS_SHARD_RETRY_AFTER_MAX_S: { default: 60, max: 3_600 },
  WFS_TENANT_RETRY_AFTER_MAX_S: { default: 300, max: 86_400 },
  WFS_ENTITY_INDEX_MAX_RECORDS: { default: 200_000, max: 100_000_000 },
  WFS_ENTITY_INDEX_TTL_SECONDS: { default: 30, max: 3_600 },
  WFS_POLL_INTERVAL_SECONDS: { default: 15, max: 3_600 },
  WFS_POLL_CALLS_PER_SECOND: { default: DEFAULT_LIMITS.poll.callsPerSecond, max: 100_000 },
  WFS_LIVE_ADDRESS_STRIKES: { default: DEFAULT_LIMITS.socket.addressStrikes, max: 1_000_000 },
  WFS_LIVE_ADDRESS_BLOCK_SECONDS: { default: DEFAULT_LIMITS.socket.addressBlockMs / 1000, max: 3_600 },
  WFS_MAX_REQUESTS_IN_FLIGHT: { default: DEFAULT_LIMITS.request.inFlight, max: 100_000 },
  WFS_REQUEST_BODY_TIMEOUT_MS: { default: DEFAULT_LIMITS.request.bodyTimeoutMs, max: 60_000 },
  WFS_LIVE_CONNECTIONS_PER_ADDRESS: { default: DEFAULT_LIMITS.socket.connectionsPerAddress, max: 20_000 },
  // At most a company's subscriptions on a replica: each distinct filter is an open subscription's.
  WFS_LIVE_FILTERS_PER_COMPANY: { default: DEFAULT_LIMITS.live.filtersPerCompany, max: DEFAULT_LIMITS.live.perCompany },
  WFS_MAX_CONNECTIONS: { default: DEFAULT_LIMITS.connection.maxConnections, max: 1_000_000 },
  WFS_MAX_CONNECTIONS_PER_ADDRESS: { default: DEFAULT_LIMITS.connection.connectionsPerAddress, max: 1_000_000 },
  WFS_HEADERS_TIMEOUT_MS: { default: DEFAULT_LIMITS.connection.headersTimeoutMs, max: 60_000 },
  // As long as node:http's keep-alive timeout (limits.connection.keepAliveTimeoutMs): by the end of the
  // drain every kept-alive connection has carried a `Connection: close` answer or been
  // idle that long and closed as at any other time, so stopping cuts no idle connection.
  WFS_DRAIN_SECONDS: { default: DEFAULT_LIMITS.connection.keepAliveTimeoutMs / 1000, max: 300 },
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
  /** WFS_MAX_COST as read: the largest estimated answer an operation may ask for (the bound itself is `limits.query.maxCost`, what cost.ts reads). */
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
  /** WFS_DRAIN_SECONDS: after SIGTERM, how long the replica answers `/ready` 503 and keeps serving (with `Connection: close`) before it stops accepting connections (default 5). */
  readonly drainSeconds: number;
  /** WFS_FRESHNESS_SECONDS: how far behind the upstream an answer may be (docs/caching.md); 0: every list read goes upstream, answers `no-store`. */
  readonly freshnessSeconds: number;
  /** WFS_CACHE_INVALIDATION_URLS: gateways' invalidation endpoints (Apollo Router's format) told of the changes the pollers see. */
  readonly cacheInvalidationUrls: readonly string[];
  /** WFS_CACHE_INVALIDATION_KEY: sent to them as `Authorization`; set whenever the URLs are. */
  readonly cacheInvalidationKey: string | null;
  /** Every bound, the `WFS_*` settings over DEFAULT_LIMITS (`Limits`). */
  readonly limits: Limits;
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
  const limits = limitsOf(env);
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
    maxCost: limits.query.maxCost,
    upstreamAttemptTimeoutMs: positiveInteger(env, 'WFS_UPSTREAM_ATTEMPT_TIMEOUT_MS'),
    shardRetryAfterMaxSeconds: positiveInteger(env, 'WFS_SHARD_RETRY_AFTER_MAX_S'),
    tenantRetryAfterMaxSeconds: positiveInteger(env, 'WFS_TENANT_RETRY_AFTER_MAX_S'),
    entityIndexMaxRecords: positiveInteger(env, 'WFS_ENTITY_INDEX_MAX_RECORDS'),
    entityIndexTtlSeconds: entityIndexTtl(env, freshnessSeconds),
    pollIntervalSeconds: positiveInteger(env, 'WFS_POLL_INTERVAL_SECONDS'),
    drainSeconds: positiveInteger(env, 'WFS_DRAIN_SECONDS'),
    freshnessSeconds,
    ...cacheInvalidation(env),
    limits,
  };
  return Object.freeze(config);
}

/** The bounds: the `WFS_*` settings that set one, over DEFAULT_LIMITS. */
function limitsOf(env: Env): Limits {
  return withLimits(DEFAULT_LIMITS, {
    connection: {
      maxConnections: positiveInteger(env, 'WFS_MAX_CONNECTIONS'),
      connectionsPerAddress: positiveInteger(env, 'WFS_MAX_CONNECTIONS_PER_ADDRESS'),
      headersTimeoutMs: positiveInteger(env, 'WFS_HEADERS_TIMEOUT_MS'),
    },
    request: { inFlight: positiveInteger(env, 'WFS_MAX_REQUESTS_IN_FLIGHT'), bodyTimeoutMs: positiveInteger(env, 'WFS_REQUEST_BODY_TIMEOUT_MS') },
    query: { maxCost: positiveInteger(env, 'WFS_MAX_COST') },
    socket: {
      connectionsPerAddress: positiveInteger(env, 'WFS_LIVE_CONNECTIONS_PER_ADDRESS'),
      addressStrikes: positiveInteger(env, 'WFS_LIVE_ADDRESS_STRIKES'),
      addressBlockMs: positiveInteger(env, 'WFS_LIVE_ADDRESS_BLOCK_SECONDS') * 1000,
    },
    live: { filtersPerCompany: positiveInteger(env, 'WFS_LIVE_FILTERS_PER_COMPANY') },
    poll: { callsPerSecond: positiveInteger(env, 'WFS_POLL_CALLS_PER_SECOND') },
  });
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
