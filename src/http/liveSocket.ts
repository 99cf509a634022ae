/**
 * Live updates over WebSocket: the `graphql-ws` protocol (subprotocol
 * `graphql-transport-ws`, what Apollo Router's subgraph WebSocket mode, Hive Gateway,
 * GraphiQL and the clients' graphql-ws links speak) on the HTTP server and path of
 * queries, served by graphql-ws's own `useServer`.
 *
 * Identity as for queries (same resolver: router secret, trusted header, verified
 * JWT, demo default), from the upgrade request's headers or, for a header absent
 * there, from the `headers` object of the `connection_init` payload; checked when the
 * connection is initialised (a refusal closes it with 4403 and the error code in the
 * reason) and again at each subscribe (a refusal is an `error` message with the query
 * error code). A subscribe document meets the query limits (tokens, depth, aliases,
 * directives, fields) and the cost bound of queries. Bounded: connections per replica,
 * misbehaving connections per remote address (liveAddressGuard.ts), subscriptions per
 * connection (the hub bounds them per company and replica), message size and rate,
 * the time to `connection_init`, ping/pong liveness, and what a client that does not
 * read may have buffered.
 *
 * Hostile input is cheap to refuse, so that a flood of it leaves other companies'
 * queries their event-loop turns: a connection's messages are handled one per turn
 * (ws's `allowSynchronousEvents: false`), nothing it sent after its close is read, a
 * subscribe's identity is checked once per connection and second, a document's
 * parse, validation and cost estimate are kept per document text, and refusals that
 * say the same every time are made once.
 */
import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { GraphQLError, getOperationAST, parse, specifiedRules, validate, type DocumentNode, type ExecutionArgs, type GraphQLFormattedError, type GraphQLSchema } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer, type WebSocket } from 'ws';
import { NUMERIC_SETTINGS } from '../config';
import { createContext, type ContextServices, type GraphQLContext, type LiveContext } from '../graphql/data/context';
import { CostEstimates, costRefusal } from '../graphql/server/cost';
import { createDocumentStore } from '../graphql/server/documentStore';
import { LIMIT_ERROR_CODE, isTokenLimitError, limitParseOptions, limitRules, type QueryLimits } from '../graphql/server/limits';
import type { LiveHub } from '../live/hub';
import type { LiveMetrics } from '../live/metrics';
import type { Logger } from '../observability/logger';
import type { AnyResource } from '../upstream/resources';
import { createAddressGuard } from './liveAddressGuard';
import { digest, sameSecret } from './routes';

/** Limits of the WebSocket side; every field has a default. */
export interface LiveSocketLimits {
  /** Open WebSocket connections on the replica; past it an upgrade is answered 503. */
  readonly connections: number;
  /** Subscriptions open (or being set up) on one connection; past it a subscribe gets an error. */
  readonly subscriptionsPerConnection: number;
  /** The largest message a client may send, in bytes (ws closes the connection with 1009 past it). */
  readonly messageBytes: number;
  /** How long a connection may wait before its `connection_init`, in ms (then closed with 4408). */
  readonly connectionInitMs: number;
  /** Ping every this many ms; a connection that does not answer with a pong within as long again is terminated. */
  readonly keepAliveMs: number;
  /** Bytes a connection may have waiting to be sent (a client that does not read); past it, it is dropped. */
  readonly bufferedBytes: number;
  /** Refused subscribes a connection may send; past it, it is closed (1008): a client that keeps asking past a bound is not a screen. */
  readonly refusalsPerConnection: number;
  /** New subscriptions one company may open at once on a replica, then `companySubscribesPerSecond`; past it a subscribe is refused (SERVICE_UNAVAILABLE). */
  readonly companySubscribeBurst: number;
  readonly companySubscribesPerSecond: number;
  /** Messages a connection may send at once, then `messagesPerSecond`; past it, it is closed (1008). */
  readonly messageBurst: number;
  readonly messagesPerSecond: number;
  /**
   * Strikes one remote address may earn within `addressWindowSeconds`: a connection
   * closed for a protocol violation or past a message or refusal bound earns 5, one
   * that ended before its `connection_init` was accepted (a refused identity, none in
   * time, a client that gave up) earns 1. Past it, upgrades
   * from that address are refused (429, Retry-After) for `addressBlockSeconds`. An
   * upgrade carrying the router secret is not counted (the router has many users on
   * one address, and limits them itself).
   */
  readonly addressStrikes: number;
  readonly addressWindowSeconds: number;
  readonly addressBlockSeconds: number;
  /** A refused upgrade is answered after this pause (a client that ignores Retry-After waits anyway), at most `heldRefusals` at once. */
  readonly refusalDelayMs: number;
  readonly heldRefusals: number;
}

export const DEFAULT_LIVE_SOCKET_LIMITS: LiveSocketLimits = Object.freeze({
  connections: 20_000,
  // A gateway multiplexes a company's subscriptions over one connection (Hive Gateway
  // keeps one per caller identity), so this is well above one screen's few.
  subscriptionsPerConnection: 1_000,
  messageBytes: 256 * 1024,
  connectionInitMs: 3_000,
  keepAliveMs: 12_000,
  bufferedBytes: 1024 * 1024,
  refusalsPerConnection: 100,
  companySubscribeBurst: 1_000,
  companySubscribesPerSecond: 100,
  messageBurst: 2_000,
  messagesPerSecond: 200,
  addressStrikes: NUMERIC_SETTINGS.WFS_LIVE_ADDRESS_STRIKES.default,
  addressWindowSeconds: 10,
  addressBlockSeconds: NUMERIC_SETTINGS.WFS_LIVE_ADDRESS_BLOCK_SECONDS.default,
  refusalDelayMs: 1_000,
  heldRefusals: 1_000,
});

/** At most this many `connection_init` headers are read, each at most this long. */
const MAX_INIT_HEADERS = 50;
const MAX_INIT_HEADER_CHARS = 8_192;
/** How often connections are checked for a send buffer over the bound, in ms. */
const BUFFER_CHECK_MS = 1_000;
/** A connection's identity, once checked, serves its subscribes for this long (then it is checked again). */
const IDENTITY_RECHECK_MS = 1_000;
/** Parsed and validated subscription documents kept, by the memory they hold (documentStore.ts). */
const DOCUMENT_CACHE_BYTES = 4 * 2 ** 20;
/** A closed connection that does not answer the close is cut after this long (ws would wait 30 s). */
const CLOSE_GRACE_MS = 1_000;
/**
 * Close codes that say the client broke the protocol or a bound, which no graphql-ws
 * client library does: graphql-ws's (4400 malformed, 4401 subscribe before ack, 4409
 * reused id, 4429 second init) and ours (1008 past a rate, 1009 too big). Each such
 * connection counts VIOLATION_STRIKES against its address; one that merely ended
 * before its `connection_init` was accepted (a refused identity, 4403; none in time,
 * 4408; a client that gave up) counts 1, as an honest client can do that now and then.
 */
const VIOLATION_CLOSE_CODES: ReadonlySet<number> = new Set([1008, 1009, 4400, 4401, 4409, 4429]);
const VIOLATION_STRIKES = 5;

export interface LiveSocketOptions {
  readonly httpServer: Server;
  readonly path: string;
  /**
   * The subgraph schema, asked for at the first subscription (a replica that serves no
   * subscription never builds it); one not instrumented by Apollo Server's plugins.
   */
  readonly schema: () => GraphQLSchema;
  readonly services: ContextServices;
  readonly hub: LiveHub;
  /** Whether the tenant may read `list` now (the client's scope check); rejects with FORBIDDEN. */
  readonly authorize: (tenantId: string, resource: AnyResource) => Promise<void>;
  readonly routerSecret: string | null;
  readonly queryLimits: QueryLimits;
  /** The upstream time one change's resolution may use, in ms (a query's budget). */
  readonly budgetMs: number;
  /** Apollo's error formatter (graphql/errors.ts): upstream errors to their codes and client sentences. */
  readonly formatError: (formatted: GraphQLFormattedError, error: unknown) => GraphQLFormattedError;
  readonly metrics: LiveMetrics;
  readonly logger: Logger;
  readonly limits?: Partial<LiveSocketLimits>;
}

/** What the server keeps of one connection. */
interface Connection {
  /** The headers identity is read from: the upgrade request's, completed by `connection_init`'s. */
  headers: IncomingHttpHeaders;
  /** Subscriptions accepted and not completed yet (each has its context here). */
  readonly contexts: Map<string, SubscriptionContext>;
  /** Subscriptions accepted or being checked: taken before the first await, so a burst of subscribes cannot all pass the bound. */
  slots: number;
  /** Subscribes refused so far. */
  refusals: number;
  /** The tenant of the last identity check, and when it was made (or the check under way). */
  identity: { readonly tenantId: Promise<string>; readonly at: number } | undefined;
}

/** What the server keeps of one socket, from its upgrade to its close. */
interface SocketState {
  /** The remote address strikes count against; null when the upgrade carried the router secret. */
  readonly address: string | null;
  /** Its `connection_init` was accepted. */
  acked: boolean;
  /** It was closed for a protocol violation or past a bound. */
  violated: boolean;
}

/** A parsed and validated document, or why it is refused. */
type CheckedDocument = { readonly document: DocumentNode } | { readonly errors: readonly GraphQLError[] };

export interface LiveSocket {
  /** Open WebSocket connections. */
  readonly connections: number;
  close(): Promise<void>;
}

/** Serves graphql-ws on `options.path` of `options.httpServer`. */
export function attachLiveSocket(options: LiveSocketOptions): LiveSocket {
  const limits = { ...DEFAULT_LIVE_SOCKET_LIMITS, ...options.limits };
  const { schema, services, metrics, logger } = options;
  const routerSecret = options.routerSecret ? digest(options.routerSecret) : null;
  // One message a turn per connection: a client's burst of messages in one packet is
  // not handled in one go while other requests wait (ws defers the next message to
  // setImmediate, and stops reading the socket while its messages wait).
  const wss = new WebSocketServer({ noServer: true, maxPayload: limits.messageBytes, perMessageDeflate: false, allowSynchronousEvents: false });
  const connections = new WeakMap<object, Connection>();
  const sockets = new WeakMap<WebSocket, SocketState>();
  const parseOptions = limitParseOptions(options.queryLimits);
  const companyRate = new RateBuckets(limits.companySubscribeBurst, limits.companySubscribesPerSecond);
  const rules = [...specifiedRules, ...limitRules(options.queryLimits)];
  const documents = createDocumentStore(DOCUMENT_CACHE_BYTES);
  const estimates = new CostEstimates();
  const guard = createAddressGuard({
    strikes: limits.addressStrikes,
    windowSeconds: limits.addressWindowSeconds,
    blockSeconds: limits.addressBlockSeconds,
    refusalDelayMs: limits.refusalDelayMs,
    heldRefusals: limits.heldRefusals,
  });

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = req.url ?? '/';
    const query = url.indexOf('?');
    if ((query === -1 ? url : url.slice(0, query)) !== options.path) return refuseUpgrade(socket, 404, 'Not Found');
    if (wss.clients.size >= limits.connections) {
      metrics.refused.inc({ reason: 'replica' });
      return refuseUpgrade(socket, 503, 'Service Unavailable');
    }
    const accept = (address: string | null) =>
      wss.handleUpgrade(req, socket, head, (ws) => {
        sockets.set(ws, { address, acked: false, violated: false });
        wss.emit('connection', ws, req);
      });
    // The router is trusted with its own users' limits; only its secret proves it.
    if (routerSecret && sameSecret(req.headers['router-authorization'], routerSecret)) return accept(null);
    const address = req.socket.remoteAddress ?? '';
    guard
      .blockedFor(address)
      .then((blockedMs) => {
        if (blockedMs === 0) return socket.destroyed ? undefined : accept(address);
        metrics.refused.inc({ reason: 'address' });
        guard.refuse(socket, blockedMs);
      })
      .catch((error: unknown) => {
        logger.error({ err: error }, 'live: a WebSocket upgrade failed');
        socket.destroy();
      });
  };
  options.httpServer.on('upgrade', onUpgrade);

  const refuse = (reason: string, code: string, message: string): GraphQLError[] => {
    metrics.refused.inc({ reason });
    return [new GraphQLError(message, { extensions: { code } })];
  };
  // Refusals that say the same every time are made once: a GraphQLError records a stack
  // trace when made, the largest cost of refusing a flood of subscribes.
  const sameRefusals = new Map<string, readonly GraphQLError[]>();
  const refuseAlike = (reason: string, code: string, message: string): readonly GraphQLError[] => {
    metrics.refused.inc({ reason });
    let errors = sameRefusals.get(message);
    if (!errors) sameRefusals.set(message, (errors = Object.freeze([new GraphQLError(message, { extensions: { code } })])));
    return errors;
  };
  const notInitialised = 'the connection was not initialised';
  const perConnection = `at most ${limits.subscriptionsPerConnection} subscriptions may be open on one connection; complete some, or open another connection`;
  const companyRateExceeded = `your company opened more than ${limits.companySubscribeBurst} subscriptions in a short time on this replica; retry in a moment`;

  const server = useServer<Record<string, unknown> | undefined>(
    {
      schema: () => schema(),
      connectionInitWaitTimeout: limits.connectionInitMs,
      onConnect: async (ctx) => {
        const headers = identityHeaders(ctx.extra.request.headers, ctx.connectionParams?.headers);
        const problem = await identityProblem(headers);
        if (problem) {
          metrics.refused.inc({ reason: 'identity' });
          ctx.extra.socket.close(4403, closeReason(`${problem.code}: ${problem.message}`));
          return false;
        }
        connections.set(ctx, { headers, contexts: new Map(), slots: 0, refusals: 0, identity: undefined });
        const state = sockets.get(ctx.extra.socket);
        if (state) state.acked = true;
        return true;
      },
      onSubscribe: async (ctx, id, payload): Promise<ExecutionArgs | readonly GraphQLError[]> => {
        const connection = connections.get(ctx);
        if (!connection) return refuseAlike('identity', 'UNAUTHENTICATED', notInitialised);
        if (connection.slots >= limits.subscriptionsPerConnection) return refuseAlike('connection', 'BAD_REQUEST', perConnection);
        connection.slots += 1;
        const accepted = await checkSubscribe(connection, id, payload);
        // A refusal gives its slot back at once; an accepted one when it completes (onComplete).
        if (Array.isArray(accepted)) {
          connection.slots -= 1;
          if (++connection.refusals > limits.refusalsPerConnection) {
            metrics.refused.inc({ reason: 'rate' });
            ctx.extra.socket.close(1008, 'too many refused subscriptions');
          }
        }
        return accepted;
      },
      onNext: (_ctx, _id, _payload, _args, result) => {
        if (!result.errors) return undefined;
        const { errors, ...rest } = result;
        return { ...rest, errors: errors.map((error) => options.formatError(error.toJSON(), error)) };
      },
      onComplete: (ctx, id) => {
        const connection = connections.get(ctx);
        const context = connection?.contexts.get(id);
        if (!connection || !context) return;
        context.close();
        connection.contexts.delete(id);
        connection.slots -= 1;
      },
      onClose: (ctx) => {
        const connection = connections.get(ctx);
        if (!connection) return;
        for (const context of connection.contexts.values()) context.close();
        connection.contexts.clear();
        connection.slots = 0;
      },
    },
    wss,
    limits.keepAliveMs,
  );

  /** The checks of a subscribe after the connection's bound: identity, document, limits, cost; its execution arguments, or why not. */
  async function checkSubscribe(connection: Connection, id: string, payload: { query: string; operationName?: string | null; variables?: Record<string, unknown> | null }): Promise<ExecutionArgs | readonly GraphQLError[]> {
    let tenantId: string;
    try {
      tenantId = await identityOf(connection);
    } catch (error) {
      const { code, message } = errorOf(error);
      return refuse('identity', code, message);
    }
    if (!companyRate.take(tenantId)) return refuseAlike('company', 'SERVICE_UNAVAILABLE', companyRateExceeded);
    if (typeof payload.query !== 'string') return refuseAlike('document', 'BAD_REQUEST', 'the subscribe payload has no query');
    const checked = await checkedDocument(payload.query);
    if ('errors' in checked) {
      metrics.refused.inc({ reason: 'document' });
      return checked.errors;
    }
    const { document } = checked;
    const operation = getOperationAST(document, payload.operationName);
    if (!operation) return refuse('document', 'BAD_REQUEST', 'the document has no operation of that name (name one with operationName)');
    if (operation.operation !== 'subscription') {
      return refuse('document', 'BAD_REQUEST', `only subscriptions are served over WebSocket; send ${operation.operation === 'query' ? 'queries' : 'mutations'} over HTTP POST to this path`);
    }
    const variables = payload.variables ?? {};
    const overBudget = costRefusal(operation, estimates.of(schema(), document, operation, variables), options.queryLimits.maxCost);
    if (overBudget) {
      metrics.refused.inc({ reason: 'cost' });
      return [overBudget];
    }
    const context = new SubscriptionContext(services, connection.headers, tenantId, options.budgetMs, {
      hub: options.hub,
      authorize: (tenant, list) => {
        const resource = services.resources.named(list);
        return resource ? options.authorize(tenant, resource) : Promise.resolve();
      },
    });
    connection.contexts.get(id)?.close();
    connection.contexts.set(id, context);
    return {
      schema: schema(),
      document,
      operationName: payload.operationName ?? null,
      variableValues: variables,
      contextValue: context,
    };
  }

  /**
   * The connection's tenant: checked again once IDENTITY_RECHECK_MS have passed since
   * the last check (a token that expired, a tenant no longer configured), shared by the
   * subscribes that arrive meanwhile. A failed check is not kept.
   */
  function identityOf(connection: Connection): Promise<string> {
    const now = performance.now();
    if (connection.identity && now - connection.identity.at < IDENTITY_RECHECK_MS) return connection.identity.tenantId;
    const tenantId = services.identify(connection.headers);
    const identity = (connection.identity = { tenantId, at: now });
    tenantId.catch(() => {
      if (connection.identity === identity) connection.identity = undefined;
    });
    return tenantId;
  }

  /**
   * A subscribe document parsed and validated once per text (by its SHA-256, as Apollo
   * Server keys its document store), within DOCUMENT_CACHE_BYTES; a refused one is
   * worked out each time (a refusal counts against its connection, which is closed
   * past `refusalsPerConnection`).
   */
  async function checkedDocument(query: string): Promise<CheckedDocument> {
    const key = createHash('sha256').update(query).digest('hex');
    const known = await documents.get(key);
    if (known) return { document: known };
    let document: DocumentNode;
    try {
      document = parse(query, parseOptions);
    } catch (error) {
      const message = (error as Error).message;
      const tokens = isTokenLimitError(message);
      return { errors: [new GraphQLError(tokens ? message.replace(/^Syntax Error: /, '') : message, { extensions: { code: tokens ? LIMIT_ERROR_CODE : 'GRAPHQL_PARSE_FAILED' } })] };
    }
    const invalid = validate(schema(), document, rules);
    if (invalid.length > 0) {
      return { errors: invalid.map((error) => new GraphQLError(error.message, { nodes: error.nodes ?? null, extensions: { code: LIMIT_ERROR_CODE, ...error.extensions } })) };
    }
    await documents.set(key, document);
    return { document };
  }

  // useServer reports a socket's errors (a frame over the size bound, a bad frame, a
  // write to a peer that is gone) with console.error and "check your implementation":
  // they are the client's doing, any client can cause them at will, so they go to the
  // debug log instead, and the socket is closed as useServer would. A write to a peer
  // that is gone settles quietly: its close follows and ends its subscriptions.
  wss.on('connection', (socket) => {
    const state = sockets.get(socket) ?? { address: null, acked: false, violated: false };
    // Closed for a violation (by graphql-ws or here): noted for its address's strikes,
    // and cut if it does not answer the close soon (a hostile peer need not).
    const close = socket.close.bind(socket);
    socket.close = ((code?: number, reason?: string | Buffer) => {
      if (code !== undefined && VIOLATION_CLOSE_CODES.has(code) && !state.violated) {
        state.violated = true;
        setTimeout(() => socket.terminate(), CLOSE_GRACE_MS).unref();
      }
      close(code, reason);
    }) as typeof socket.close;
    socket.once('close', () => {
      if (state.address !== null && (state.violated || !state.acked)) guard.strike(state.address, state.violated ? VIOLATION_STRIKES : 1);
    });
    socket.removeAllListeners('error');
    socket.on('error', (error: Error) => {
      // A frame over the size bound or a broken frame: the client's doing.
      state.violated = true;
      logger.debug({ err: error.message }, 'live: a WebSocket connection failed');
      if (socket.readyState === socket.OPEN) socket.close(1011, 'Internal error');
      else socket.terminate();
    });
    // Messages are handled as they arrive, each a promise until its answer is written:
    // a client sending faster than they are answered would pile them up in memory. A
    // bucket per connection (a burst, then a steady rate well above what a client or a
    // gateway sends: an init, its subscribes, completes, pings) closes it past that.
    // graphql-ws's own handler is called from here, so that nothing a client sent after
    // its connection was closed (past the rate, or by graphql-ws for a malformed
    // message) is read: ws still delivers the frames that had arrived.
    const handlers = socket.listeners('message') as Array<(this: WebSocket, ...args: unknown[]) => void>;
    socket.removeAllListeners('message');
    let tokens = limits.messageBurst;
    let filledAt = performance.now();
    socket.on('message', function (this: WebSocket, ...args: unknown[]) {
      if (socket.readyState !== socket.OPEN) return;
      const now = performance.now();
      tokens = Math.min(limits.messageBurst, tokens + ((now - filledAt) / 1000) * limits.messagesPerSecond);
      filledAt = now;
      if ((tokens -= 1) < 0) {
        metrics.refused.inc({ reason: 'rate' });
        logger.debug('live: a connection sending messages faster than allowed was closed');
        socket.close(1008, 'too many messages');
        socket.terminate();
        return;
      }
      for (const handler of handlers) handler.apply(this, args);
    });
    const send = socket.send.bind(socket);
    socket.send = ((data: string, callback?: (error?: Error) => void) => send(data, () => callback?.())) as typeof socket.send;
  });

  // A client that stops reading while changes keep coming: its send buffer would grow
  // without end. Past the bound the connection is dropped (its subscriptions end).
  const bufferCheck = setInterval(() => {
    for (const client of wss.clients) {
      if (client.bufferedAmount > limits.bufferedBytes) {
        metrics.slowConsumersDropped.inc();
        logger.debug({ bufferedBytes: client.bufferedAmount }, 'live: a connection that did not read was dropped');
        client.terminate();
      }
    }
  }, BUFFER_CHECK_MS);
  bufferCheck.unref();

  async function identityProblem(headers: IncomingHttpHeaders): Promise<{ code: string; message: string } | undefined> {
    if (routerSecret && !sameSecret(headers['router-authorization'], routerSecret)) {
      return { code: 'UNAUTHENTICATED', message: 'this subgraph only answers the router: router-authorization is missing or wrong' };
    }
    try {
      await services.identify(headers);
      return undefined;
    } catch (error) {
      return errorOf(error);
    }
  }

  return {
    get connections() {
      return wss.clients.size;
    },
    async close() {
      clearInterval(bufferCheck);
      guard.close();
      options.httpServer.off('upgrade', onUpgrade);
      for (const client of wss.clients) client.close(1001, 'Going away');
      await server.dispose();
    },
  };
}

/** The abort reason of a subscription's work when it ends: one object, not a DOMException (and its stack) per subscription when a connection with many closes. */
const SUBSCRIPTION_OVER = new DOMException('the subscription is over', 'AbortError');

/**
 * The context of one subscription: the request context of queries, with the tenant
 * found at subscribe, made afresh for each change it resolves (`renew`), so a
 * subscription holds no page cache, loader or deadline between changes.
 */
class SubscriptionContext implements GraphQLContext {
  private current!: GraphQLContext;
  private controller!: AbortController;
  private timer: NodeJS.Timeout | undefined;
  private readonly services: ContextServices;
  readonly live: LiveContext;

  constructor(
    services: ContextServices,
    private readonly headers: IncomingHttpHeaders,
    tenantId: string,
    private readonly budgetMs: number,
    live: Omit<LiveContext, 'renew'>,
  ) {
    this.services = { ...services, identify: () => Promise.resolve(tenantId) };
    this.live = { ...live, renew: () => this.renew() };
    this.fresh();
  }

  tenant() {
    return this.current.tenant();
  }

  knownTenant() {
    return this.current.knownTenant();
  }

  get itemErrors() {
    return this.current.itemErrors;
  }

  get signal() {
    return this.current.signal;
  }

  release(): void {
    this.current.release();
  }

  renew(): void {
    this.close();
    this.fresh();
  }

  close(): void {
    clearTimeout(this.timer);
    this.controller.abort(SUBSCRIPTION_OVER);
    this.current.release();
  }

  private fresh(): void {
    const controller = (this.controller = new AbortController());
    this.timer = setTimeout(() => controller.abort(new DOMException('the request budget is spent', 'TimeoutError')), this.budgetMs);
    this.timer.unref();
    this.current = createContext(this.services, this.headers, controller.signal);
  }
}

/**
 * The upgrade request's headers, completed by the `headers` object of the
 * `connection_init` payload for the names the upgrade did not carry (a browser's
 * WebSocket cannot set headers; a gateway forwards them there). Names are lower-cased;
 * only string values are read, and only so many.
 */
export function identityHeaders(upgrade: IncomingHttpHeaders, initHeaders: unknown): IncomingHttpHeaders {
  const headers: IncomingHttpHeaders = { ...upgrade };
  if (typeof initHeaders !== 'object' || initHeaders === null || Array.isArray(initHeaders)) return headers;
  let read = 0;
  for (const [name, value] of Object.entries(initHeaders as Record<string, unknown>)) {
    if (++read > MAX_INIT_HEADERS) break;
    if (typeof value !== 'string' || value.length > MAX_INIT_HEADER_CHARS || name.length > 256) continue;
    const lower = name.toLowerCase();
    if (headers[lower] === undefined) headers[lower] = value;
  }
  return headers;
}

function errorOf(error: unknown): { code: string; message: string } {
  if (error instanceof GraphQLError && typeof error.extensions.code === 'string') return { code: error.extensions.code, message: error.message };
  return { code: 'UNAUTHENTICATED', message: 'the identity could not be checked' };
}

/** A WebSocket close reason is at most 123 bytes. */
function closeReason(text: string): string {
  let reason = text;
  while (Buffer.byteLength(reason) > 123) reason = reason.slice(0, -2);
  return reason;
}

function refuseUpgrade(socket: Duplex, status: number, text: string): void {
  socket.end(`HTTP/1.1 ${status} ${text}\r\nconnection: close\r\ncontent-length: 0\r\n${status === 503 ? 'retry-after: 1\r\n' : ''}\r\n`);
  socket.destroy();
}

/** A token bucket per key (a company), keys dropped once full again, so the map holds only the companies subscribing now. */
class RateBuckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly burst: number,
    private readonly perSecond: number,
  ) {}

  take(key: string): boolean {
    const now = performance.now();
    const bucket = this.buckets.get(key) ?? { tokens: this.burst, at: now };
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.at) / 1000) * this.perSecond);
    bucket.at = now;
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    if (this.buckets.size > 10_000) this.sweep(now);
    this.buckets.set(key, bucket);
    return true;
  }

  private sweep(now: number): void {
    for (const [key, bucket] of this.buckets) {
      if (bucket.tokens + ((now - bucket.at) / 1000) * this.perSecond >= this.burst) this.buckets.delete(key);
    }
  }
}
