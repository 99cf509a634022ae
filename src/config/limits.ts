/**
 * Every bound of the subgraph, by the room that checks it: what one connection, request,
 * document, WebSocket, subscription or company may hold or cause. Each bound is written
 * once, below: what it bounds and its unit (its JSDoc), why this default (its comment),
 * and the default; the types (`Limits`, `ConnectionLimits` …) are read off it.
 *
 * `loadConfig` lays the `WFS_*` settings of bounds over these defaults (a setting names
 * its bound in settings.ts) and freezes the result; `startServer` takes a partial of it
 * per group (`ServerOptions.limits`, tests lower bounds) and hands each room its group.
 * Adding a bound is one field here, the check that reads it from its group, and its
 * refusal reason (graphql/admission/refusals.ts); a setting for it is one entry in
 * settings.ts. docs/limits.md says what each bound protects.
 */
const defaults = {
  /** Sockets before any request is read (http/connectionBounds.ts, `boundConnections`). */
  connection: {
    /** Open sockets of the replica, HTTP and WebSocket together (Node's `server.maxConnections`; `WFS_MAX_CONNECTIONS`). */
    // What the shipped 256 MiB heap holds with every other bound filled at once (the
    // memory account, memory/account.ts and docs/limits.md): a socket whose headers are
    // still arriving holds its 8 KiB and up to 16 KiB of header text, so 1 500 of them
    // take about 36 MiB. The router keeps a pool of a few connections; a bigger heap
    // takes more (raise --max-old-space-size and this together: the account checks).
    maxConnections: 1_500,
    /** Open sockets of one client address not (yet) known to be the router's (`WFS_MAX_CONNECTIONS_PER_ADDRESS`). */
    // Twice one address's 500 requests in flight (the share of requests binds first).
    connectionsPerAddress: 1_000,
    /** How long a request's headers may take to arrive whole, in ms (Node's `headersTimeout`; `WFS_HEADERS_TIMEOUT_MS`). */
    // Node's default is 60 s, checked every 30 s: 15 000 sockets that never finished their
    // headers stayed about 30 s and added about 130 MB RSS.
    headersTimeoutMs: 10_000,
    /** How long a whole request may take to arrive, in ms (Node's `requestTimeout`). */
    // Node's default; a body has its own, shorter deadline (request.bodyTimeoutMs).
    requestTimeoutMs: 60_000,
    /** How long a kept-alive connection may stay idle between requests, in ms (Node's `keepAliveTimeout`). */
    // Node's default, said once: WFS_DRAIN_SECONDS's default is as long (settings.ts).
    keepAliveTimeoutMs: 5_000,
  },
  /** A GraphQL request over HTTP before any GraphQL work (http/requestBounds.ts, `boundRequests`). */
  request: {
    /** GraphQL requests one replica serves at once; past it 503 (`WFS_MAX_REQUESTS_IN_FLIGHT`). */
    // Each request holds its context, its signal and timer, and its upstream wait: well
    // above what the autoscaler's target lets reach a replica, below what runs it out of
    // its 256 MiB heap.
    inFlight: 2_000,
    /** The largest request body, in bytes; past it 413 and the connection closed. */
    // A document of the largest shipped operation is a few KiB; a router sends no more.
    bodyBytes: 1024 * 1024,
    /** The most JSON values, objects, arrays and keys one body may hold (its structural units, memory/jsonSize.ts); past it 413 and the connection closed. */
    // A body's parse, not its bytes, is what a replica holds: 1 MiB of `{},` parses into
    // about 21 MiB. A router's largest body, an `_entities` batch, has about three units a
    // representation, and the cost bound (query.maxCost) refuses far fewer
    // representations than 100 000 / 3; at 64 bytes a unit this is at most 6.4 MB of parse.
    bodyValues: 100_000,
    /** Bytes the bodies of the requests in flight may hold together, counted as parsed (memory/jsonSize.ts: text and parse); past it 503. */
    // A body is read whole before it is parsed, and its text, its parsed JSON and a shared
    // request's key stay until the answer is out: slow clients each sending a body near
    // 1 MiB add up (400 of them took a replica to 472 MiB RSS, past the Kubernetes
    // example's 512Mi limit). A body counts what it holds once parsed (twice its bytes
    // and 64 bytes a structural unit: memory/jsonSize.ts), from its first chunk until its
    // response closes: 16 bodies of 1 MiB of `{},` from one address reached the heap
    // limit when bytes alone were counted.
    // At 16 MiB, seven bodies of 1 MiB of string at once, or two of 100 000 `{}`: the
    // share of the heap the memory account leaves them (memory/account.ts).
    bufferedBodyBytes: 16 * 1024 * 1024,
    /** The share of `inFlight` and `bufferedBodyBytes` one client address may hold (0 to 1); past it 429. */
    // A quarter (500 requests and 16 MiB of bodies by default) is about three times what a
    // replica at its autoscaling target serves in a second (171 requests per second,
    // docs/operations.md), so a gateway or a NAT without the router secret is not held
    // back at ordinary load, while no one address can fill either bound (about 200 sockets
    // holding nearly whole bodies, or 2 000 sending them slowly, did lock everyone out).
    addressShare: 1 / 4,
    /** How long a body may take to arrive whole once its headers are in, in ms; past it 408 (`WFS_REQUEST_BODY_TIMEOUT_MS`). */
    // A router sends a whole document at once; 5 s is a 1 MiB body at 200 KiB/s. Without
    // it, 2 000 sockets each sending 9 of 10 body bytes held every slot until Node's 60 s
    // request timeout.
    bodyTimeoutMs: 5_000,
    /** How long a written answer may take to leave, in ms; past it the connection is destroyed. */
    // A client that stops reading would otherwise keep its buffered answer for ever.
    writeTimeoutMs: 30_000,
    /** The upstream time one GraphQL request (or one change of a subscription) may use, all its pages together, in ms. */
    // Below the router's subgraph timeout (20 s in router/router.yaml), so a slow upstream
    // ends in our UPSTREAM_UNAVAILABLE error, not in the router's generic timeout.
    budgetMs: 15_000,
  },
  /**
   * What one GraphQL document may ask for, queries and subscriptions alike
   * (graphql/admission/limits.ts and cost.ts). Every field counts, introspection fields
   * (`__typename`, `__type`, `__schema` and everything under them) included; the only
   * thing kept apart is the subtree of a real `__schema`/`__type` root field, which is
   * measured against its own, looser depth bound instead of the data depth (GraphiQL's
   * and GraphQL Code Generator's introspection queries nest `ofType` about nine levels
   * deep). A fragment is never exempt because of its name.
   */
  // docs/limits.md, "Query limits", says what each counts; the shipped operations are far
  // below every one, introspection queries of GraphiQL and GraphQL Code Generator pass.
  query: {
    /** Nesting of data fields, counted in fields, through fragments. */
    maxDepth: 12,
    /** Nesting inside a `__schema`/`__type` root field, counted from the root field. */
    maxIntrospectionDepth: 20,
    /** Aliased fields per operation, fragments counted once per spread. */
    maxAliases: 30,
    /** Directives in the whole document. */
    maxDirectives: 50,
    /** Fields per operation once every fragment spread is expanded (1 per field). */
    maxFields: 20_000,
    /** Estimated size of an operation's answer, page sizes multiplied through (cost.ts); checked once variables are known (`WFS_MAX_COST`). */
    // About 40 times the largest shipped operation, and one connection nested in another
    // at default page sizes (40 401); three nested at 100 (1 000 000) never pass.
    maxCost: 50_000,
    /** Lexical tokens in the document; enforced by graphql-js while parsing. */
    maxTokens: 5_000,
  },
  /** The WebSocket transport (http/liveSocket.ts, liveMessages.ts) and its upgrade admission (graphql/admission/upgradeGate.ts, addressGuard.ts). */
  socket: {
    /** Open WebSocket connections on the replica; past it an upgrade is answered 503. */
    // Each holds about 20 KiB, and a message half received up to messageBytes more: 250
    // take about 21 MiB of the account. A gateway keeps one per caller identity and
    // multiplexes its subscriptions; a bigger heap takes more.
    connections: 250,
    /**
     * Open connections from one client address (an IPv6 address by its /64; the router
     * secret exempt, and with a secret set every accepted upgrade carries it); past it
     * an upgrade is answered 429 (`WFS_LIVE_CONNECTIONS_PER_ADDRESS`).
     */
    // Two fifths of the replica's: it takes three addresses (or /64s) acting together to
    // fill a replica; the router secret is exempt.
    connectionsPerAddress: 100,
    /** The largest message a client may send, in bytes (ws closes the connection with 1009 past it). */
    // A connection_init carries at most three headers of 8 KiB (gate.initHeaderChars), a
    // subscribe a document of at most 5 000 tokens and a filter; ws holds a message half
    // received for as long as it takes, so this is in the account once per connection.
    messageBytes: 64 * 1024,
    /** The most JSON values, objects, arrays and keys one message may hold (its structural units, memory/jsonSize.ts); past it the connection is closed (1009). */
    // A subscribe is a query and a filter (tens of values), a connection_init a few
    // headers: 10 000 is far above both, and at most 640 KB once parsed.
    messageValues: 10_000,
    /**
     * Bytes one connection's messages may hold, received but not yet handled, counted as
     * parsed (http/liveInbox.ts); past it the connection is not read until they drain.
     */
    // Room for a message of the largest size being handled while the next arrives; a
    // connection that sends faster than its messages are handled waits (TCP's window),
    // instead of the replica holding what it sent (two connections' 900 subscribes of
    // 250 KB each held up to 450 MB before).
    queuedBytes: 1024 * 1024,
    /** Bytes the messages of all connections may hold so; past it a connection that sends more is not read until they drain. */
    // Handled within a few turns each: only a flood waits here, and it waits on its own sockets.
    queuedBytesPerReplica: 4 * 1024 * 1024,
    /** The longest subscription id, in characters (graphql-ws's own are 36-character UUIDs); a longer one closes the connection (4400). */
    subscriptionIdChars: 128,
    /** How long a connection may wait before its `connection_init`, in ms (then closed with 4408). */
    connectionInitMs: 3_000,
    /** Ping every this many ms; a connection that does not answer with a pong within as long again is terminated. */
    keepAliveMs: 12_000,
    /** Bytes a connection may have waiting to be sent (a client that does not read); past it, it is dropped (checked every second). */
    bufferedBytes: 1024 * 1024,
    /** Bytes all connections may have waiting to be sent; past it the connections holding the most are dropped until the rest fit (checked every second). */
    // Per connection alone, 250 connections that stopped reading could hold 250 MiB.
    bufferedBytesPerReplica: 4 * 1024 * 1024,
    /** Messages a connection may send within `messageBurst / messagesPerSecond` seconds; past it, it is closed (1008). */
    // 2 000 per 10 s, well above what a client or a gateway sends.
    messageBurst: 2_000,
    /** See `messageBurst`. */
    messagesPerSecond: 200,
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
    addressStrikes: 20,
    /** See `addressStrikes`. */
    addressWindowMs: 10_000,
    /** See `addressStrikes`. */
    addressBlockMs: 30_000,
    /** A refused upgrade is answered after this pause, in ms (a client that ignores Retry-After waits anyway), at most `heldRefusals` at once. */
    refusalDelayMs: 1_000,
    /** See `refusalDelayMs`. */
    heldRefusals: 1_000,
  },
  /** The subscribe gate (graphql/admission/subscribeGate.ts, variableBytes.ts). */
  gate: {
    /** Subscriptions open (or being set up) on one connection; past it a subscribe gets an error. */
    // A gateway multiplexes a company's subscriptions over one connection (Hive Gateway
    // keeps one per caller identity), so this is well above one screen's few.
    subscriptionsPerConnection: 1_000,
    /** Refused subscribes a connection may send; past it, it is closed (1008): a client that keeps asking past a bound is not a screen. */
    refusalsPerConnection: 100,
    /** New subscriptions one company may open on a replica within `companySubscribeBurst / companySubscribesPerSecond` seconds; past it a subscribe is refused (SERVICE_UNAVAILABLE). */
    companySubscribeBurst: 1_000,
    /** See `companySubscribeBurst`. */
    companySubscribesPerSecond: 100,
    /** How often the identity of a connection with open subscriptions is checked again, in ms (a JWT past `exp`, a key withdrawn). */
    identityRecheckMs: 30_000,
    /** The longest `connection_init` header identity reads, in characters; a longer one is not read. */
    // A JWT with many claims fits; with the three names identity reads, a connection
    // keeps at most 24 KiB of its `connection_init`.
    initHeaderChars: 8_192,
    /**
     * Bytes of variables (the coerced values its operations declare, measured as their
     * JSON text) the open subscriptions of one connection, of one company on the replica,
     * and of the whole replica may keep; a subscribe past one is refused (BAD_USER_INPUT).
     */
    // A subscription's variables are a filter (an id, two date-times: about 150 bytes),
    // so these leave 256 bytes to each of a connection's 1 000 subscriptions, 1 KiB to
    // each of a company's 1 000, 4 KiB to each of the replica's 1 000: 4 MiB of the
    // 256 MiB heap at most, whatever clients send.
    variableBytesPerConnection: 256 * 1024,
    /** See `variableBytesPerConnection`. */
    variableBytesPerCompany: 1024 * 1024,
    /** See `variableBytesPerConnection`. */
    variableBytesPerReplica: 4 * 1024 * 1024,
  },
  /** The live hub's subscriptions and filters (live/hub.ts). */
  live: {
    /** Open subscriptions one company may hold on a replica. */
    perCompany: 1_000,
    /** Open subscriptions on a replica. */
    // Each holds about 4 KiB and its queue of changes: 1 000 take about 12 MiB of the account.
    perReplica: 1_000,
    /** Changes waiting for one subscriber before it is dropped as a slow consumer. */
    // A poll's changes arrive together: room for one company's edit of 500 records.
    queuedChanges: 500,
    /**
     * Distinct filters one company's open subscriptions may have on a replica (views; a
     * subscription with a filter already open joins its view). Matching no longer costs
     * views × changes, but each view is memory and a place in the index rebuilt when
     * views come and go; screens with the same window share one
     * (`WFS_LIVE_FILTERS_PER_COMPANY`).
     */
    // Keeps what the filters hold (memory, the index built again as they come and go)
    // small; matching a change costs its lookups and the subscribers it reaches, not the
    // filters (docs/limits.md, "Live updates").
    filtersPerCompany: 1_000,
    /**
     * Companies' lists a replica watches for queries (live/watch.ts: a poller started
     * because the list is read often, not for subscribers). A company has one poller per
     * list at most, so its share is bounded by its lists already.
     */
    // At the default poll budget (50 calls a second) and interval (15 s), 750 one-page
    // lists fill the budget: 500 watched ones leave a third of it to subscriptions
    // before intervals stretch (docs/caching.md, "Watched lists").
    watchedLists: 500,
    /** Open callback subscriptions (Apollo's callback protocol, http/liveCallback.ts) of one router, by its callback origin, on a replica. */
    // Half the replica's subscriptions: one router (or whoever names its origin) cannot hold them all.
    callbacksPerRouter: 500,
    /** Retries of one callback POST that got a 5xx, a 429 or no answer, before the subscription ends. */
    // About 0.7 s of backoff in all (Apollo Server's plugin retries 5 times within 1 s each).
    callbackRetries: 3,
    /** How long one callback POST may take, in ms. */
    // A router's callback endpoint answers at once (204); a heartbeat's interval is seconds.
    callbackTimeoutMs: 5_000,
  },
  /** What live polling may cost the upstream (live/pollBudget.ts). */
  poll: {
    /** Upstream page calls all of a replica's live polls may make per second together, shared max-min between companies; past it, intervals stretch (`WFS_POLL_CALLS_PER_SECOND`). */
    // At one page a list, a company's 2 lists polled every 15 s want 2/15 of a call a
    // second: 375 such companies poll a replica before any interval stretches.
    callsPerSecond: 50,
  },
};

/** Every bound, by room (the fields of `defaults` above, each with what it bounds and its unit). */
export type Limits = { readonly [Group in keyof typeof defaults]: { readonly [Bound in keyof (typeof defaults)[Group]]: number } };
export type ConnectionLimits = Limits['connection'];
export type RequestLimits = Limits['request'];
export type QueryLimits = Limits['query'];
export type SocketLimits = Limits['socket'];
export type GateLimits = Limits['gate'];
export type LiveLimits = Limits['live'];
export type PollLimits = Limits['poll'];

/** One bound: its room and its name there (what a setting of settings.ts sets). */
export type BoundName = { [Group in keyof Limits]: readonly [Group, keyof Limits[Group]] }[keyof Limits];

/** A partial of `Limits`, group by group (ServerOptions.limits): each bound given replaces its default or setting. */
export type LimitOverrides = { readonly [Group in keyof Limits]?: Partial<Limits[Group]> };

/**
 * The default of every bound: the one place they are written. The `WFS_*` settings of
 * bounds take their defaults from here (settings.ts), and rooms built without the
 * configuration (unit tests) fall back to their group.
 */
export const DEFAULT_LIMITS: Limits = deepFreeze(defaults);

/** `base` with `overrides` laid over it group by group, frozen (loadConfig: the settings over DEFAULT_LIMITS; startServer: ServerOptions.limits over the configuration's). */
export function withLimits(base: Limits, overrides: LimitOverrides = {}): Limits {
  const merged = {} as Record<keyof Limits, object>;
  for (const group of Object.keys(base) as Array<keyof Limits>) merged[group] = { ...base[group], ...overrides[group] };
  return deepFreeze(merged as unknown as Limits);
}

function deepFreeze<T extends object>(value: T): T {
  for (const inner of Object.values(value)) if (typeof inner === 'object' && inner !== null) deepFreeze(inner as object);
  return Object.freeze(value);
}
