/**
 * Every refusal the subgraph makes, on every transport, in one table: why (the reason,
 * which is also the `reason` label of the one metric that counts it), the
 * `extensions.code` the client reads, and how it is answered (an HTTP status, a
 * WebSocket close code, or an error in the operation's one result). Each reason means
 * one bound, so a label's rate says which bound is reached; each is counted through
 * one Observer event (`refused`, upstream/observer.ts), whatever the transport.
 *
 * Where a refusal's message names a configured bound, the place that checks the bound
 * words it; the rest are worded here.
 */
import { GraphQLError } from 'graphql';
import type { LiveLimitReason } from '../../live/hub';
import type { ErrorCode } from '../errors';

/** The counters refusals are counted on (names kept from before the table). */
export type RefusalMetric = 'wfs_graphql_requests_refused_total' | 'wfs_http_connections_refused_total' | 'wfs_live_subscriptions_refused_total';

export interface RefusalShape {
  readonly metric: RefusalMetric;
  /** The `extensions.code` of the GraphQL error the client reads; null where the socket is closed or dropped with no GraphQL answer. */
  readonly code: ErrorCode | null;
  /** How it is answered: an HTTP status (a POST, or an upgrade before its handshake), a WebSocket close code, or `result` (a `next` with the error, then `complete`). */
  readonly answer: { readonly status: number } | { readonly close: number } | 'result' | 'dropped';
  /** What the bound is, for the metric's help and the docs. */
  readonly bound: string;
  /** The message, when it names no configured bound. */
  readonly message?: string;
}

const REQUESTS = 'wfs_graphql_requests_refused_total';
const CONNECTIONS = 'wfs_http_connections_refused_total';
const LIVE = 'wfs_live_subscriptions_refused_total';

export const REFUSALS = {
  // A query's POST: before any GraphQL work (http/requestBounds.ts, http/routes.ts).
  query_router_secret: { metric: REQUESTS, code: 'UNAUTHENTICATED', answer: { status: 401 }, bound: 'a POST without the router secret (WFS_ROUTER_SECRET set)', message: 'this subgraph only answers the router: the router-authorization header is missing or wrong' },
  in_flight: { metric: REQUESTS, code: 'SERVICE_UNAVAILABLE', answer: { status: 503 }, bound: "the replica's requests in flight", message: 'the server is serving too many requests at once; retry in a moment' },
  body_bytes: { metric: REQUESTS, code: 'SERVICE_UNAVAILABLE', answer: { status: 503 }, bound: "the replica's request-body bytes held", message: 'the server is reading too many request bodies at once; retry in a moment' },
  address_in_flight: { metric: REQUESTS, code: 'SERVICE_UNAVAILABLE', answer: { status: 429 }, bound: "one client address's share of the requests in flight", message: 'too many requests from this address at once; retry in a moment' },
  address_body_bytes: { metric: REQUESTS, code: 'SERVICE_UNAVAILABLE', answer: { status: 429 }, bound: "one client address's share of the body bytes held", message: 'too many request-body bytes from this address at once; retry in a moment' },
  body_timeout: { metric: REQUESTS, code: 'BAD_REQUEST', answer: { status: 408 }, bound: 'a request body not in whole within WFS_REQUEST_BODY_TIMEOUT_MS' },
  // A query's document, before execution (Apollo Server with document.ts, limits.ts and cost.ts).
  query_document: { metric: REQUESTS, code: 'GRAPHQL_VALIDATION_FAILED', answer: { status: 400 }, bound: 'a query document that does not parse, validate or meet the query limits (GRAPHQL_PARSE_FAILED when it does not parse)' },
  query_cost: { metric: REQUESTS, code: 'GRAPHQL_VALIDATION_FAILED', answer: { status: 400 }, bound: 'a query over WFS_MAX_COST' },
  query_subscription: { metric: REQUESTS, code: 'BAD_REQUEST', answer: { status: 400 }, bound: 'a subscription sent as an HTTP request', message: 'a subscription over HTTP is served at this path with Accept: text/event-stream (SSE) or multipart/mixed;subscriptionSpec=1.0, or with extensions.subscription (Apollo\'s callback protocol); or subscribe over a WebSocket (graphql-ws, subprotocol graphql-transport-ws)' },
  // A connection, before a request of it is served (http/connectionBounds.ts).
  replica: { metric: CONNECTIONS, code: null, answer: 'dropped', bound: "the replica's open sockets (WFS_MAX_CONNECTIONS)" },
  address: { metric: CONNECTIONS, code: null, answer: 'dropped', bound: "one client address's open sockets (WFS_MAX_CONNECTIONS_PER_ADDRESS)" },
  headers_timeout: { metric: CONNECTIONS, code: null, answer: { status: 408 }, bound: 'headers not in within WFS_HEADERS_TIMEOUT_MS' },
  request_timeout: { metric: CONNECTIONS, code: null, answer: { status: 408 }, bound: "a whole request not in within Node's request timeout" },
  // A WebSocket upgrade, before its handshake (http/liveSocket.ts).
  router_secret: { metric: LIVE, code: 'UNAUTHENTICATED', answer: { status: 401 }, bound: 'an upgrade without the router secret (WFS_ROUTER_SECRET set)', message: 'this subgraph only answers the router: the router-authorization header is missing or wrong' },
  replica_connections: { metric: LIVE, code: null, answer: { status: 503 }, bound: "the replica's WebSocket connections" },
  address_connections: { metric: LIVE, code: null, answer: { status: 429 }, bound: "one client address's WebSocket connections (WFS_LIVE_CONNECTIONS_PER_ADDRESS)" },
  address_blocked: { metric: LIVE, code: null, answer: { status: 429 }, bound: 'an address blocked after WFS_LIVE_ADDRESS_STRIKES connections that broke the protocol or were refused' },
  // An open WebSocket connection (http/liveSocket.ts, the subscribe gate).
  messages: { metric: LIVE, code: null, answer: { close: 1008 }, bound: "one connection's messages per second", message: 'too many messages' },
  message_values: { metric: LIVE, code: null, answer: { close: 1009 }, bound: "one message's JSON values, objects, arrays and keys (what it becomes once parsed)", message: 'message has too many JSON values' },
  refusals: { metric: LIVE, code: null, answer: { close: 1008 }, bound: "one connection's refused subscribes", message: 'too many refused subscriptions' },
  identity: { metric: LIVE, code: 'UNAUTHENTICATED', answer: { close: 4403 }, bound: 'an identity refused at connection_init' },
  identity_lapsed: { metric: LIVE, code: 'UNAUTHENTICATED', answer: 'result', bound: "a connection's identity lapsed while subscriptions were open (a JWT past exp, a key withdrawn): they end with the error" },
  // A subscribe (the subscribe gate; the hub's bounds in live/hub.ts).
  not_initialised: { metric: LIVE, code: 'UNAUTHENTICATED', answer: 'result', bound: 'a subscribe on a connection not initialised', message: 'the connection was not initialised' },
  subscribe_identity: { metric: LIVE, code: 'UNAUTHENTICATED', answer: 'result', bound: "a subscribe whose connection's identity no longer checks" },
  connection: { metric: LIVE, code: 'BAD_REQUEST', answer: 'result', bound: "one connection's open subscriptions" },
  company_rate: { metric: LIVE, code: 'SERVICE_UNAVAILABLE', answer: 'result', bound: "one company's new subscriptions per second on a replica" },
  document: { metric: LIVE, code: 'GRAPHQL_VALIDATION_FAILED', answer: 'result', bound: 'a subscribe document that does not parse, validate or meet the query limits (GRAPHQL_PARSE_FAILED when it does not parse)' },
  operation: { metric: LIVE, code: 'BAD_REQUEST', answer: 'result', bound: 'a subscribe with no query, no operation of its name, or a query or mutation' },
  variables: { metric: LIVE, code: 'BAD_USER_INPUT', answer: 'result', bound: "a subscribe whose variables do not coerce to its operation's" },
  cost: { metric: LIVE, code: 'GRAPHQL_VALIDATION_FAILED', answer: 'result', bound: 'a subscribe document over WFS_MAX_COST' },
  connection_bytes: { metric: LIVE, code: 'BAD_USER_INPUT', answer: 'result', bound: "the variables bytes of one connection's open subscriptions" },
  company_bytes: { metric: LIVE, code: 'BAD_USER_INPUT', answer: 'result', bound: "the variables bytes of one company's open subscriptions on a replica" },
  replica_bytes: { metric: LIVE, code: 'BAD_USER_INPUT', answer: 'result', bound: "the variables bytes of the replica's open subscriptions" },
  company_subscriptions: { metric: LIVE, code: 'SERVICE_UNAVAILABLE', answer: 'result', bound: "one company's open subscriptions on a replica (live/hub.ts)" },
  replica_subscriptions: { metric: LIVE, code: 'SERVICE_UNAVAILABLE', answer: 'result', bound: "the replica's open subscriptions (live/hub.ts)" },
  filters: { metric: LIVE, code: 'SERVICE_UNAVAILABLE', answer: 'result', bound: "one company's distinct filters (live/hub.ts)" },
  // A subscription POSTed with Apollo's callback protocol (http/liveCallback.ts): answered in the request's response, nothing sent to the callback URL.
  callback_disabled: { metric: LIVE, code: 'BAD_REQUEST', answer: 'result', bound: 'a callback subscription with WFS_SUBSCRIPTION_CALLBACK_ALLOW unset', message: 'this subgraph serves no callback subscriptions (WFS_SUBSCRIPTION_CALLBACK_ALLOW is unset); subscribe over graphql-ws, SSE or multipart' },
  callback_extension: { metric: LIVE, code: 'BAD_REQUEST', answer: 'result', bound: 'a callback subscription whose extensions.subscription is malformed (callbackUrl, subscriptionId, verifier, heartbeatIntervalMs)', message: 'extensions.subscription must be an object with callbackUrl, subscriptionId, verifier and heartbeatIntervalMs' },
  callback_origin: { metric: LIVE, code: 'BAD_REQUEST', answer: 'result', bound: 'a callback URL on an origin WFS_SUBSCRIPTION_CALLBACK_ALLOW does not name', message: "the callback URL's origin is not one this subgraph may call (WFS_SUBSCRIPTION_CALLBACK_ALLOW)" },
  callback_router: { metric: LIVE, code: 'SERVICE_UNAVAILABLE', answer: 'result', bound: "one router's (callback origin's) open callback subscriptions on a replica" },
  callback_check: { metric: LIVE, code: 'BAD_REQUEST', answer: 'result', bound: 'a callback subscription whose router did not accept its first check' },
} as const satisfies Record<string, RefusalShape>;

/** Every reason a request, connection or subscription is refused. */
export type RefusalReason = keyof typeof REFUSALS;

export const REFUSAL_REASONS = Object.keys(REFUSALS) as readonly RefusalReason[];

// The hub (live/, which knows no GraphQL) names its reasons itself: each is one of these.
const _hubReasons: Record<LiveLimitReason, RefusalShape> = REFUSALS;
void _hubReasons;

/** The reasons counted on `metric`. */
export type ReasonOn<M extends RefusalMetric> = { [K in RefusalReason]: (typeof REFUSALS)[K]['metric'] extends M ? K : never }[RefusalReason];
/** Why a GraphQL request was refused before any GraphQL work. */
export type RequestRefusalReason = ReasonOn<typeof REQUESTS>;
/** Why a connection was closed before a request of it was served. */
export type ConnectionRefusalReason = ReasonOn<typeof CONNECTIONS>;

/** The reasons counted on `metric`, the values its `reason` label takes. */
export function reasonsOf(metric: RefusalMetric): readonly RefusalReason[] {
  return REFUSAL_REASONS.filter((reason) => REFUSALS[reason].metric === metric);
}

/** The code, answer and bound of `reason`. */
export function refusal(reason: RefusalReason): RefusalShape {
  return REFUSALS[reason];
}

/** The HTTP status `reason` is answered with (a POST's or an upgrade's), if it is answered with one. */
export function statusOf(reason: RefusalReason): number | undefined {
  const { answer } = REFUSALS[reason] as RefusalShape;
  return typeof answer === 'object' && 'status' in answer ? answer.status : undefined;
}

/** The WebSocket close code `reason` closes its connection with, if it does. */
export function closeCodeOf(reason: RefusalReason): number | undefined {
  const { answer } = REFUSALS[reason] as RefusalShape;
  return typeof answer === 'object' && 'close' in answer ? answer.close : undefined;
}

/** The message of `reason` (its own, or `worded` by the check that names a configured bound). */
export function messageOf(reason: RefusalReason, worded?: string): string {
  const message = worded ?? (REFUSALS[reason] as RefusalShape).message;
  if (message === undefined) throw new Error(`refusal ${reason} has no message of its own: its check words it`);
  return message;
}

/** The GraphQL error a client reads for `reason`. */
export function refusalError(reason: RefusalReason, worded?: string): GraphQLError {
  const code = REFUSALS[reason].code ?? 'BAD_REQUEST';
  return new GraphQLError(messageOf(reason, worded), { extensions: { code } });
}

/** Where refusals are counted: the Observer port's `refused` (upstream/observer.ts). */
export interface RefusalEvents {
  refused(reason: RefusalReason, transport?: string): void;
}
