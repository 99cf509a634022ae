import { DEFAULT_LIMITS } from './limits';
import * as read from './readers';
import { bound, integer, setting } from './spec';

/**
 * The settings of how much and how long: the upstream's budgets and windows, what is
 * kept and for how long, live polling, and the bounds (each `bound` sets one field of
 * `Limits`, and takes its default from DEFAULT_LIMITS, where its reason is written).
 * A `{range}` in a meaning is the setting's range as the code applies it.
 */
export const TUNING_SETTINGS = {
  WFS_UPSTREAM_CALL_BUDGET: integer({
    max: 10_000,
    fallback: 200,
    meaning: "upstream page calls one GraphQL request may make ({range}); past it the request's remaining fields fail with `UPSTREAM_BAD_RESPONSE` saying the budget was reached (see [Upstream faults and limits](limits.md#upstream-faults-and-limits))",
  }),
  WFS_MAX_COST: bound('query', 'maxCost', {
    max: 1_000_000_000,
    meaning: "the largest answer one operation may ask for, estimated before it runs (page sizes multiplied through nested connections; see [Query limits](limits.md#query-limits)); over it: HTTP 400 `GRAPHQL_VALIDATION_FAILED` and no upstream call. {range}; keep `demand_control`'s `max` in `router/router.yaml` equal",
  }),
  WFS_UPSTREAM_ATTEMPT_TIMEOUT_MS: integer({
    max: 15_000,
    fallback: 8_000,
    meaning: 'how long one upstream HTTP attempt may take ({range} ms); an attempt that runs out of it counts as a failure of its shard for the circuit breaker',
  }),
  WFS_SHARD_RETRY_AFTER_MAX_S: integer({
    max: 3_600,
    fallback: 60,
    meaning: 'the longest shard (503) `Retry-After` window kept ({range} s), whatever the shard asks; when it ends one probe call decides',
  }),
  WFS_TENANT_RETRY_AFTER_MAX_S: integer({
    max: 86_400,
    fallback: 300,
    meaning: 'the longest tenant (429) `Retry-After` window kept ({range} s); when it ends one probe call decides',
  }),
  WFS_ENTITY_INDEX_MAX_RECORDS: integer({
    max: 100_000_000,
    fallback: 200_000,
    meaning: "records the entity indexes of all companies may hold together ({range}): the process's memory budget for them, at most about 300 bytes of heap a record (a record whose texts pass 150 characters counts as one more per 150, and a kept page as one when empty or per 150 characters of its references, so long names, ids or page references cannot outgrow the budget); past it the least recently used company's index is dropped first (see [Memory per company](operations.md#memory-per-company)). With `WFS_FRESHNESS_SECONDS` above 0, answers kept whole take at most a quarter of it, counted in it ([Caching](caching.md#whole-answers))",
  }),
  WFS_ENTITY_INDEX_TTL_SECONDS: integer({
    max: 3_600,
    fallback: 30,
    meaning: "how long a company's entity index answers from what it has seen ({range}); an idle company's index is released within 5 s after that. With `WFS_FRESHNESS_SECONDS` above 0 the index follows the window: unset, it is the window; set, it can only shorten it ([Caching](caching.md#one-answer-for-one-record))",
  }),
  // 0 by default: clients write to the REST API directly and read through us, and an
  // operator who has not chosen a window must not find that a read right after a write
  // answers what was there before it (docs/caching.md, "The default"). Choosing one is a
  // line of configuration.
  WFS_FRESHNESS_SECONDS: integer({
    min: 0, max: 3_600,
    fallback: 0,
    meaning: 'how far behind the upstream an answer may be ({range} s): within it a page a company read is served again from memory, a query asked again byte for byte is answered whole from memory before execution, and a gateway may keep an answer (`Cache-Control: private, max-age=` what is left of it); a list read often is watched by the live pollers, and what a poll confirms is served for another window from that poll. `0`: every list read goes upstream and every answer is `no-store` (see [Caching](caching.md))',
  }),
  WFS_CACHE_INVALIDATION_URLS: setting(read.urlList, [], {
    meaning: "comma-separated gateway invalidation endpoints (Apollo Router's format, e.g. `http://router:4003/invalidation`; Hive Gateway with `router/gateway.config.ts` answers it too, at `/invalidation` on its port) that are POSTed a `cache_tag` invalidation when a live poll sees a company's list change (see [Caching](caching.md#invalidation))",
    whenUnset: 'unset: none',
  }),
  WFS_CACHE_INVALIDATION_KEY: setting(read.secret(16), null, {
    meaning: "the gateways' shared invalidation key (16+ characters), sent as `Authorization`; required with `WFS_CACHE_INVALIDATION_URLS`",
    whenUnset: 'none',
  }),
  WFS_SUBSCRIPTION_CALLBACK_ALLOW: setting(read.originList, [], {
    meaning: "comma-separated origins (`scheme://host:port`, no path) a router's subscription callback URL may name (Apollo's HTTP callback protocol, [Live updates](live.md#gateways)); a callback subscription naming any other origin is refused (`BAD_REQUEST`, `wfs_live_subscriptions_refused_total{reason=\"callback_origin\"}`) and nothing is sent to it",
    whenUnset: 'unset: callback subscriptions refused',
  }),
  WFS_POLL_INTERVAL_SECONDS: integer({
    max: 3_600,
    fallback: 15,
    meaning: 'how often a list with live subscribers, or watched because queries read it often (with `WFS_FRESHNESS_SECONDS` above 0), is polled upstream ({range} s; each poller jittered by up to ±10 %); one poll per company and list serves every subscriber, whatever their filters, and the watched reads; a list neither subscribed nor read often is not polled (see [Live updates](live.md), [Caching](caching.md#watched-lists))',
  }),
  WFS_POLL_CALLS_PER_SECOND: bound('poll', 'callsPerSecond', {
    max: 100_000,
    meaning: 'upstream page calls all live polls of a replica may make per second together ({range}); past it the budget is shared fairly between companies: a company that wants no more than its equal share is never stretched, and only those that want more have their intervals stretched (`wfs_live_poll_stretch_factor` says the largest stretch; see [Live updates](live.md#how-it-polls))',
  }),
  WFS_LIVE_ADDRESS_STRIKES: bound('socket', 'addressStrikes', {
    max: 1_000_000,
    meaning: "WebSocket connections from one client address (an IPv6 address by its /64) the replica may close for misbehaving within 10 s ({range}): a protocol violation, a refused identity, past a message or refusal bound, or ending before its `connection_init` was accepted. Past it, that address's upgrades are answered `429` with `Retry-After` (after a pause of up to 1 s) for `WFS_LIVE_ADDRESS_BLOCK_SECONDS`. Connections that behave are not counted, so a gateway or many screens behind one address open as many as they need; an upgrade carrying the router secret is never counted. Behind a load balancer that hides client addresses, every client shares its address: raise this, or bound clients at the balancer (see [Live updates](live.md#limits))",
  }),
  WFS_LIVE_ADDRESS_BLOCK_SECONDS: bound('socket', 'addressBlockMs', {
    max: 3_600,
    perUnit: 1000, meaning: 'how long an address past `WFS_LIVE_ADDRESS_STRIKES` has its WebSocket upgrades refused ({range} s)',
  }),
  WFS_MAX_REQUESTS_IN_FLIGHT: bound('request', 'inFlight', {
    max: 100_000,
    meaning: 'GraphQL requests one replica serves at once ({range}); past it a request is answered `503` with `Retry-After: 1`. One client address may hold a quarter of it (`429` past that), unless its requests carry the router secret. Each request in flight holds its context and its upstream wait: raise it only with the heap to match (see [Limits](limits.md#time-and-size-bounds))',
  }),
  WFS_REQUEST_BODY_TIMEOUT_MS: bound('request', 'bodyTimeoutMs', {
    max: 60_000,
    meaning: 'how long a request body may take to arrive whole once its headers are in ({range} ms); a body still incomplete then is answered `408` `BAD_REQUEST`, its connection closed and its slot freed. A router sends whole documents at once; clients on slow links sending large documents directly may need more (see [Limits](limits.md#time-and-size-bounds))',
  }),
  WFS_HEADERS_TIMEOUT_MS: bound('connection', 'headersTimeoutMs', {
    max: 60_000,
    meaning: "how long a request's headers may take to arrive whole, from the connection or the request's first byte ({range} ms; checked every second); past it the connection is answered `408` and closed. A router sends its headers at once (see [Limits](limits.md#connections))",
  }),
  WFS_MAX_CONNECTIONS: bound('connection', 'maxConnections', {
    max: 1_000_000,
    meaning: "open sockets of one replica, HTTP and WebSocket together ({range}; Node's `server.maxConnections`); past it a new connection is closed before anything of it is read. What the shipped heap holds beside every other bound: a socket whose headers are arriving holds about 24 KiB, and a value that does not fit the heap stops start-up (see [the memory account](limits.md#the-memory-account))",
  }),
  WFS_MAX_CONNECTIONS_PER_ADDRESS: bound('connection', 'connectionsPerAddress', {
    max: 1_000_000,
    meaning: "open sockets of one client address (an IPv6 address by its /64) that no request has yet shown to be the router's ({range}); past it a new connection from that address is closed at once. A connection whose request carries the router secret leaves its address's count (see [Limits](limits.md#connections))",
  }),
  WFS_LIVE_CONNECTIONS_PER_ADDRESS: bound('socket', 'connectionsPerAddress', {
    max: 20_000,
    meaning: "open WebSocket connections from one client address (an IPv6 address by its /64), the router's exempt ({range}); past it an upgrade is answered `429`. Two fifths of the replica's 250: it takes three addresses to fill a replica (see [Live updates](live.md#limits))",
  }),
  WFS_LIVE_MAX_CONNECTIONS: bound('socket', 'connections', {
    max: 1_000_000,
    meaning: "open WebSocket connections on one replica ({range}); past it an upgrade is answered `503`. Each holds about 20 KiB and a message half received (up to 64 KiB): raise it with the heap, and a value that does not fit stops start-up (see [the memory account](limits.md#the-memory-account))",
  }),
  WFS_LIVE_MAX_SUBSCRIPTIONS: bound('live', 'perReplica', {
    max: 10_000_000,
    meaning: "open subscriptions on one replica, over every protocol ({range}); past it a subscribe is answered `SERVICE_UNAVAILABLE`. Each holds about 4 KiB and its queue of changes: raise it with the heap (see [the memory account](limits.md#the-memory-account))",
  }),
  WFS_LIVE_SUBSCRIPTIONS_PER_COMPANY: bound('live', 'perCompany', {
    max: 10_000_000,
    meaning: "open subscriptions of one company on one replica ({range}); past it a subscribe is answered `SERVICE_UNAVAILABLE` (see [Live updates](live.md#limits))",
  }),
  // At most a company's subscriptions on a replica: each distinct filter is an open subscription's.
  WFS_LIVE_FILTERS_PER_COMPANY: bound('live', 'filtersPerCompany', {
    max: DEFAULT_LIMITS.live.perCompany,
    meaning: 'distinct filters one company\'s open subscriptions may have on a replica ({range}, the subscriptions a company may hold there); subscriptions sharing a filter count once, and past it a subscribe with a new filter is answered `SERVICE_UNAVAILABLE` (`wfs_live_subscriptions_refused_total{reason="filters"}`). Each filter is memory and a place in the index rebuilt as filters come and go (see [Limits](limits.md#live-updates))',
  }),
  // As long as node:http's keep-alive timeout (limits.connection.keepAliveTimeoutMs): by the end of the
  // drain every kept-alive connection has carried a `Connection: close` answer or been
  // idle that long and closed as at any other time, so stopping cuts no idle connection.
  WFS_DRAIN_SECONDS: integer({
    max: 300,
    fallback: DEFAULT_LIMITS.connection.keepAliveTimeoutMs / 1000,
    meaning: "after SIGTERM, how long the replica keeps serving before it stops accepting connections ({range} s): `/ready` answers `503` (`draining`), every answer carries `Connection: close`, WebSocket connections stay open until the end (then closed with `1001`). At least as long as it takes your balancer to take the replica out: the endpoint update in Kubernetes (a few seconds), or, for a balancer that checks `/ready`, its interval times its failure threshold plus one interval. The default equals the server's 5 s keep-alive timeout, so by the end every kept-alive connection has either carried a `Connection: close` answer or been idle long enough to be closed as at any other time, and stopping cuts none. SIGINT (Ctrl+C) stops without it (see [Shutdown](operations.md#health-readiness-and-shutdown))",
  }),
};
