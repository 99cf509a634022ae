/**
 * Live updates over WebSocket, the transport: the `graphql-ws` protocol (subprotocol
 * `graphql-transport-ws`, what Apollo Router's subgraph WebSocket mode, Hive Gateway,
 * GraphiQL and the clients' graphql-ws links speak) on the HTTP server and path of
 * queries, served by graphql-ws's `makeServer`, each socket handed over through
 * `opened({ send, close, onMessage })`. What a subscribe may do is the gate's
 * (graphql/admission/subscribeGate.ts), given at wiring as graphql-ws hooks.
 *
 * An upgrade is admitted by the admission room (graphql/admission/upgradeGate.ts: the
 * router secret, connections per replica and per client address, addresses blocked for
 * misbehaving), which answers every refusal. Bounded here, with the table's words for a
 * refusal: message size and rate, subscription id length, the time to
 * `connection_init`, ping/pong liveness, the wait for a closed peer, and what a client
 * that does not read may have buffered.
 *
 * Hostile input is cheap to refuse, so that a flood of it leaves other companies'
 * queries their event-loop turns: a connection's messages are handled one per turn
 * (ws's `allowSynchronousEvents: false`), and nothing it sent after its close is read.
 */
import type { IncomingHttpHeaders, IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { handleProtocols, makeServer, type ServerOptions } from 'graphql-ws';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import type { SocketLimits } from '../config';
import type { Logger } from '../observability/logger';
import { createAddressGuard } from '../graphql/admission/addressGuard';
import type { RefusalReason } from '../graphql/admission/refusals';
import type { RouterGate } from '../graphql/admission/routerGate';
import { createUpgradeGate, refuseMessages } from '../graphql/admission/upgradeGate';
import { heldJsonBytes, jsonUnitsOf } from '../memory/jsonSize';
import { LiveInbox, type ConnectionInbox } from './liveInbox';
import { dropLargestUntilWithin } from './unreadAnswers';
import { receive, takeSubscribe, type Flow, type SubscribeBody } from './liveMessages';

/** How often connections are checked for a send buffer over the bound, in ms. */
const BUFFER_CHECK_MS = 1_000;
/** A closed connection that does not answer the close is cut after this long (ws would wait 30 s). */
const CLOSE_GRACE_MS = 1_000;
/**
 * Close codes that say the client broke the protocol or a bound, which no graphql-ws
 * client library does: graphql-ws's (4400 malformed, 4401 subscribe before ack, 4409
 * reused id, 4429 second init) and ours (1008 past a rate, 1009 too big). Each such
 * connection counts VIOLATION_STRIKES against its address; one that merely ended
 * before its `connection_init` was accepted counts 1, as an honest client can do that
 * now and then.
 */
const VIOLATION_CLOSE_CODES: ReadonlySet<number> = new Set([1008, 1009, 4400, 4401, 4409, 4429]);
const VIOLATION_STRIKES = 5;

/** What the transport tells the protocol hooks of a connection (graphql-ws's `extra`). */
export interface SocketExtra {
  /**
   * The upgrade request's headers, given once: the identity hook reads what it needs of
   * them at `connection_init` (graphql/admission/identity.ts, `identityHeaders`), and the
   * rest, up to Node's 16 KiB of a client's headers, is not kept for the connection's life.
   */
  takeHeaders(): IncomingHttpHeaders;
  /** Closes the connection (a close code of VIOLATION_CLOSE_CODES counts against its address). */
  close(code: number, reason: string): void;
  /** Its upgrade carried the router secret: a gateway's connection, for its callers. */
  readonly gateway: boolean;
  /** The query text and variables of subscribe `id`, held beside what graphql-ws is handed (liveMessages.ts), given once. */
  takeSubscribe(id: string): SubscribeBody | undefined;
}

/**
 * The graphql-ws hooks the transport serves (the subscribe gate), their timers to stop,
 * and what graphql-ws is handed of a `connection_init` payload in its place (it keeps
 * it as `connectionParams` for the connection's life; none when not given).
 */
export type LiveProtocol = Omit<ServerOptions<Record<string, unknown> | undefined, SocketExtra>, 'connectionInitWaitTimeout' | 'jsonMessageReviver'> & {
  close?(): void;
  connectionParams?(payload: unknown): Record<string, unknown> | undefined;
};

export interface LiveSocketOptions {
  readonly httpServer: Server;
  readonly path: string;
  readonly protocol: LiveProtocol;
  /** The router-secret decision (graphql/admission/routerGate.ts), the POST path's too. */
  readonly router: RouterGate;
  /** Counts a refusal by the transport (the Observer port's `refused`): router_secret, replica_connections, address_connections, address_blocked, messages. */
  readonly refused: (reason: RefusalReason) => void;
  /** Counts a connection dropped for not reading. */
  readonly slowConsumerDropped: () => void;
  /** Told the bytes the connections' messages hold whenever they change (liveInbox.ts). */
  readonly onQueuedBytes?: (held: number) => void;
  readonly logger: Logger;
  /** Its bounds (`limits.socket` of the configuration). */
  readonly limits: SocketLimits;
}

export interface LiveSocket {
  /** Open WebSocket connections. */
  readonly connections: number;
  /** Bytes all connections have waiting to be sent now (the HTTP streams share their per-replica bound: http/liveHttp.ts). */
  buffered(): number;
  close(): Promise<void>;
}

/** What the transport keeps of one socket, from its upgrade to its close. */
interface SocketState {
  /** The client address (clientAddress) strikes and connections count against; null when the upgrade carried the router secret. */
  readonly address: string | null;
  /** Its `connection_init` was accepted. */
  acked: boolean;
  /** It was closed for a protocol violation or past a bound. */
  violated: boolean;
}

/** Serves graphql-ws on `options.path` of `options.httpServer`. */
export function attachLiveSocket(options: LiveSocketOptions): LiveSocket {
  const { logger, refused, limits } = options;
  const { router } = options;
  // One message a turn per connection: a client's burst of messages in one packet is
  // not handled in one go while other requests wait.
  const wss = new WebSocketServer({ noServer: true, maxPayload: limits.messageBytes, perMessageDeflate: false, allowSynchronousEvents: false, handleProtocols });
  const sockets = new WeakMap<WebSocket, SocketState>();
  const perAddress = new Map<string, number>();
  const { addressStrikes: strikes, addressWindowMs: windowMs, addressBlockMs: blockMs, refusalDelayMs, heldRefusals } = limits;
  const guard = createAddressGuard({ strikes, windowMs, blockMs, refusalDelayMs, heldRefusals });
  // Messages per connection: the burst per the window the steady rate earns it in (2,000
  // per 10 s by default), well above what a client or a gateway sends. One fixed window
  // per connection (rate-limiter-flexible): its answers settle in the order asked, so
  // messages keep their order.
  const messageRate = new RateLimiterMemory({ points: limits.messageBurst, duration: Math.max(1, limits.messageBurst / limits.messagesPerSecond) });
  let connectionSeq = 0;
  const { close: closeProtocol, onConnect, connectionParams, ...hooks } = options.protocol;
  const inboxes = new LiveInbox(limits.queuedBytes, limits.queuedBytesPerReplica, options.onQueuedBytes);
  const reading: MessageReading = { messageRate, refused, logger, subscriptionIdChars: limits.subscriptionIdChars, messageValues: limits.messageValues, connectionParams };
  const server = makeServer<Record<string, unknown> | undefined, SocketExtra>({
    ...hooks,
    connectionInitWaitTimeout: limits.connectionInitMs,
    onConnect: async (ctx) => {
      const answer = onConnect ? await onConnect(ctx) : true;
      if (answer !== false) acked.get(ctx.extra)?.();
      return answer;
    },
  });
  const acked = new WeakMap<SocketExtra, () => void>();

  const gate = createUpgradeGate({ path: options.path, router, guard, limits, refused, failed: (error) => logger.error({ err: error }, 'live: a WebSocket upgrade failed') });
  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) =>
    gate.admit(req, socket, { total: wss.clients.size, perAddress }, (address) =>
      wss.handleUpgrade(req, socket, head, (ws) => {
        sockets.set(ws, { address, acked: false, violated: false });
        wss.emit('connection', ws, req);
      }),
    );
  options.httpServer.on('upgrade', onUpgrade);

  const served: Served = { server, acked, inboxes, reading, perAddress, guard, messageRate, router, limits, logger };
  wss.on('connection', (socket: WebSocket, req: IncomingMessage) =>
    serveConnection(socket, req, sockets.get(socket) ?? { address: null, acked: false, violated: false }, String(++connectionSeq), served),
  );

  const bufferCheck = dropSlowReaders(wss, limits, options.slowConsumerDropped, logger);

  return {
    get connections() {
      return wss.clients.size;
    },
    buffered() {
      let total = 0;
      for (const client of wss.clients) total += client.bufferedAmount;
      return total;
    },
    async close() {
      clearInterval(bufferCheck);
      guard.close();
      closeProtocol?.();
      options.httpServer.off('upgrade', onUpgrade);
      for (const client of wss.clients) client.close(1001, 'Going away');
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

/** What every connection of the transport is served with. */
interface Served {
  readonly server: ReturnType<typeof makeServer<Record<string, unknown> | undefined, SocketExtra>>;
  readonly acked: WeakMap<SocketExtra, () => void>;
  readonly inboxes: LiveInbox;
  readonly reading: MessageReading;
  readonly perAddress: Map<string, number>;
  readonly guard: ReturnType<typeof createAddressGuard>;
  readonly messageRate: RateLimiterMemory;
  readonly router: RouterGate;
  readonly limits: SocketLimits;
  readonly logger: Logger;
}

/**
 * One accepted connection, from its upgrade to its close: counted against its address,
 * handed to graphql-ws through `opened`, its messages read through its inbox, and on
 * its close everything it held let go of and its strikes noted.
 */
function serveConnection(socket: WebSocket, req: IncomingMessage, state: SocketState, key: string, served: Served): void {
  const { server, acked, inboxes, reading, perAddress, guard, messageRate, router, limits, logger } = served;
  if (state.address !== null) perAddress.set(state.address, (perAddress.get(state.address) ?? 0) + 1);
  // Closed for a violation (by graphql-ws or here): noted for its address's strikes,
  // and cut if it does not answer the close soon (a hostile peer need not).
  const close = (code: number, reason: string) => {
    if (VIOLATION_CLOSE_CODES.has(code) && !state.violated) {
      state.violated = true;
      setTimeout(() => socket.terminate(), CLOSE_GRACE_MS).unref();
    }
    socket.close(code, reason);
  };
  const flows = new Map<string, Flow>();
  let upgradeHeaders: IncomingHttpHeaders | undefined = req.headers;
  const takeHeaders = () => {
    const headers = upgradeHeaders ?? {};
    upgradeHeaders = undefined;
    return headers;
  };
  const extra: SocketExtra = { takeHeaders, close, gateway: router.required && state.address === null, takeSubscribe: (id) => takeSubscribe(flows, id) };
  acked.set(extra, () => (state.acked = true));
  // A socket's errors (a frame over the size bound, a bad frame) are the client's
  // doing, which any client can cause at will: the debug log, not console.error.
  socket.on('error', (error: Error) => {
    state.violated = true;
    logger.debug({ err: error.message }, 'live: a WebSocket connection failed');
    if (socket.readyState === socket.OPEN) socket.close(1011, 'Internal error');
    else socket.terminate();
  });
  const ping = keepAlive(socket, limits.keepAliveMs);
  const inbox = inboxes.open(socket);
  const closed = server.opened(
    {
      protocol: socket.protocol,
      // A write to a peer that is gone settles quietly: its close follows and ends its subscriptions.
      send: (data) => new Promise<void>((resolve) => (socket.readyState === socket.OPEN ? socket.send(data, () => resolve()) : resolve())),
      close,
      onMessage: (handle) => socket.on('message', readMessage(socket, key, { flows, inbox, close }, handle, reading)),
    },
    extra,
  );
  socket.once('close', (code, reason) => {
    clearInterval(ping);
    // Nothing it sent is read after its close: its messages and their bodies go now.
    inbox.close();
    for (const flow of flows.values()) flow.body = undefined;
    if (state.address !== null) {
      const left = (perAddress.get(state.address) ?? 1) - 1;
      if (left === 0) perAddress.delete(state.address);
      else perAddress.set(state.address, left);
      if (state.violated || !state.acked) guard.strike(state.address, state.violated ? VIOLATION_STRIKES : 1);
    }
    void messageRate.delete(key);
    closed(code, String(reason)).catch((error: unknown) => logger.error({ err: error }, 'live: closing a connection failed'));
  });
}

/** What a connection's messages are read with: the message rate, where refusals and failures go, the bounds and the `connection_init` payload's reading. */
interface MessageReading {
  readonly messageRate: RateLimiterMemory;
  readonly refused: (reason: RefusalReason) => void;
  readonly logger: Logger;
  readonly subscriptionIdChars: number;
  /** The most structural units of JSON one message may have (`limits.socket.messageValues`). */
  readonly messageValues: number;
  readonly connectionParams?: (payload: unknown) => Record<string, unknown> | undefined;
}

/** What one connection's messages go through: its subscribes in flight, its inbox (liveInbox.ts), and its close. */
interface ConnectionReading {
  readonly flows: Map<string, Flow>;
  readonly inbox: ConnectionInbox;
  readonly close: SocketExtra['close'];
}

/**
 * A connection's message handler: each message is counted held in its inbox (which
 * stops reading the connection past its bounds), waits its turn in the connection's
 * rate, then goes to graphql-ws (liveMessages.ts's `receive`), which tells the inbox
 * when it is let go of; past the rate, or with more JSON values than a message may
 * have, the connection is closed.
 */
function readMessage(socket: WebSocket, key: string, connection: ConnectionReading, handle: (data: string) => Promise<void>, reading: MessageReading): (data: RawData) => void {
  const { messageRate, refused, logger, subscriptionIdChars, messageValues, connectionParams } = reading;
  const { flows, inbox, close } = connection;
  const open = () => socket.readyState === socket.OPEN;
  const toProtocol = (message: unknown) => (open() ? (handle as (what: unknown) => Promise<void>)(message) : Promise.resolve());
  return (data) => {
    if (!open()) return;
    const bytes = data as Buffer;
    const units = jsonUnitsOf(bytes);
    if (units > messageValues) {
      const { code, reason } = refuseMessages(refused, 'message_values');
      return close(code, reason);
    }
    const handled = inbox.arrive(heldJsonBytes(bytes.length, units));
    messageRate.consume(key).then(
      () => {
        if (!open()) return handled();
        receive(bytes.toString('utf8'), toProtocol, flows, close, { logger, subscriptionIdChars, connectionParams, handled });
      },
      () => {
        handled();
        if (!open()) return;
        const { code, reason } = refuseMessages(refused);
        logger.debug('live: a connection sending messages faster than allowed was closed');
        close(code, reason);
        socket.terminate();
      },
    );
  };
}

/**
 * Pings every `ms`; a socket that neither answers with a pong nor sends anything
 * within as long again is terminated. A message counts as an answer: a client sending
 * a long stream has its pong queued behind it, and is plainly there.
 */
function keepAlive(socket: WebSocket, ms: number): NodeJS.Timeout | undefined {
  if (!(ms > 0 && Number.isFinite(ms))) return undefined;
  let answered = true;
  socket.on('pong', () => (answered = true));
  socket.on('message', () => (answered = true));
  const timer = setInterval(() => {
    if (!answered) return void socket.terminate();
    answered = false;
    socket.ping();
  }, ms);
  timer.unref();
  return timer;
}

/**
 * A client that stops reading while changes keep coming: its send buffer would grow
 * without end. Past the bound the connection is dropped (its subscriptions end); and
 * while all connections' buffers together pass the replica's bound, the ones holding
 * the most are dropped until the rest fit (the memory account counts the replica's
 * bound, not one connection's times their number).
 */
function dropSlowReaders(wss: WebSocketServer, limits: Pick<SocketLimits, 'bufferedBytes' | 'bufferedBytesPerReplica'>, dropped: () => void, logger: Logger): NodeJS.Timeout {
  const drop = (client: WebSocket) => {
    dropped();
    logger.debug({ bufferedBytes: client.bufferedAmount }, 'live: a connection that did not read was dropped');
    client.terminate();
  };
  const timer = setInterval(() => {
    let total = 0;
    const holding: WebSocket[] = [];
    for (const client of wss.clients) {
      const buffered = client.bufferedAmount;
      if (buffered === 0) continue;
      if (buffered > limits.bufferedBytes) {
        drop(client);
        continue;
      }
      total += buffered;
      holding.push(client);
    }
    dropLargestUntilWithin(holding, total, limits.bufferedBytesPerReplica, (client) => client.bufferedAmount, drop);
  }, BUFFER_CHECK_MS);
  timer.unref();
  return timer;
}
