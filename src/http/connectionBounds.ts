/**
 * The bounds a client meets before any request of it is read: how many sockets the
 * replica and one client address may hold open, and the time their headers may take.
 *
 * Without them, 15 000 sockets that never finished their headers stayed open about
 * 30 s (Node checks its headers timeout only every 30 s by default) and added about
 * 130 MB RSS. Now:
 *
 * - every open socket of the replica, HTTP and WebSocket together, counts against
 *   `maxConnections` (Node's own `server.maxConnections`: past it a new connection is
 *   closed before anything of it is read, and Node's `drop` event counts it);
 * - one client address may hold `connectionsPerAddress` of them (counted here, on
 *   `connection`), so it takes many addresses acting together to fill the replica;
 * - a request's headers must arrive whole within `headersTimeoutMs` of its first byte
 *   (or of the connection), checked every second (`connectionsCheckingInterval`), and
 *   the whole request within `requestTimeoutMs` (Node's `headersTimeout` and
 *   `requestTimeout`): past either, Node answers 408 and closes the connection;
 * - a request's headers are at most MAX_HEADER_BYTES (431 past it), so that what a
 *   socket whose headers are arriving holds is what the memory account counts.
 *
 * The router is exempt from the address share, but is known only by its secret, and
 * headers come after the connection: every connection counts against its address
 * until a request on it (a query's POST or an upgrade) carries the router secret,
 * and from then on it does not. So the router's pool of connections takes no share,
 * and what it has open but not yet identified (a few connections in their first
 * packet) is far below one. The replica's bound is counted by Node before any byte is
 * read, so nothing is exempt from it.
 */
import type { IncomingMessage, Server, ServerOptions, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { DEFAULT_LIMITS, type ConnectionLimits } from '../config';
import { clientAddress } from '../graphql/admission/clientAddress';
import type { RouterGate } from '../graphql/admission/routerGate';
import type { ConnectionRefusalReason } from '../graphql/admission/refusals';

/**
 * How often Node checks the headers and request timeouts, in ms. Its default, 30 s,
 * let a socket that never finished its headers stay up to 30 s past the deadline;
 * the check walks only the connections with a request in progress.
 */
export const CONNECTIONS_CHECKING_INTERVAL_MS = 1_000;

/** The connection bounds (`limits.connection` of the configuration; config.ts says each one's default and reason), and whom to tell. */
export interface ConnectionBoundsOptions extends Omit<ConnectionLimits, 'requestTimeoutMs' | 'keepAliveTimeoutMs'> {
  /** Default: DEFAULT_LIMITS.connection's. */
  readonly requestTimeoutMs?: number;
  /** Default: DEFAULT_LIMITS.connection's. */
  readonly keepAliveTimeoutMs?: number;
  /** The router-secret decision (graphql/admission/routerGate.ts): a connection whose request carries it leaves its address's count. */
  readonly router: RouterGate;
  /** Counts a connection closed by a bound. */
  readonly refused: (reason: ConnectionRefusalReason) => void;
}

/**
 * The most header text a request may carry, in bytes: Node's default, set here so that
 * neither `--max-http-header-size` nor a later default changes what the memory account
 * counts for a socket whose headers are arriving (memory/account.ts). Past it, 431.
 */
export const MAX_HEADER_BYTES = 16 * 1024;

/** The options of `createServer` the bounds need (the timeout checks' interval and the header size can only be given there). */
export function boundedServerOptions(): ServerOptions {
  return { connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS, maxHeaderSize: MAX_HEADER_BYTES };
}

/** One socket's place in its address's count. */
interface Counted {
  readonly address: string;
  /** Still counted against the address (not yet known to be the router's, not closed). */
  counted: boolean;
}

/** Sets the connection bounds on `server` (created with `boundedServerOptions()`). */
export function boundConnections(server: Server, options: ConnectionBoundsOptions): void {
  const { router, refused, connectionsPerAddress } = options;
  server.maxConnections = options.maxConnections;
  server.headersTimeout = options.headersTimeoutMs;
  server.requestTimeout = Math.max(options.requestTimeoutMs ?? DEFAULT_LIMITS.connection.requestTimeoutMs, options.headersTimeoutMs);
  server.keepAliveTimeout = options.keepAliveTimeoutMs ?? DEFAULT_LIMITS.connection.keepAliveTimeoutMs;
  server.on('drop', () => refused('replica'));

  // At most one entry per open socket, gone with its address's last one.
  const perAddress = new Map<string, number>();
  const sockets = new WeakMap<Socket, Counted>();
  const release = (entry: Counted) => {
    if (!entry.counted) return;
    entry.counted = false;
    const left = (perAddress.get(entry.address) ?? 1) - 1;
    if (left === 0) perAddress.delete(entry.address);
    else perAddress.set(entry.address, left);
  };
  server.on('connection', (socket: Socket) => {
    const address = clientAddress(socket.remoteAddress);
    const held = perAddress.get(address) ?? 0;
    if (held >= connectionsPerAddress) {
      refused('address');
      return void socket.destroy();
    }
    perAddress.set(address, held + 1);
    const entry: Counted = { address, counted: true };
    sockets.set(socket, entry);
    socket.once('close', () => release(entry));
  });
  // A connection whose request carries the router secret is the router's from then on.
  // Asked only while the connection still counts: once per router connection.
  const identify = (req: IncomingMessage) => {
    const entry = sockets.get(req.socket);
    if (entry?.counted && router.verdict(req.headers) === 'router') release(entry);
  };
  // The response under way on each socket, for a client error to know whether its
  // headers are in (node:http keeps it only in a private field).
  const answering = new WeakMap<Socket, ServerResponse>();
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    answering.set(req.socket, res);
    identify(req);
  });
  server.on('upgrade', identify);
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    const res = answering.get(socket);
    const inProgress = res !== undefined && !res.writableFinished ? res : undefined;
    if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') refused(inProgress ? 'request_timeout' : 'headers_timeout');
    answerClientError(error, socket, inProgress);
  });
}

/**
 * What node:http does with a client error when no `clientError` listener takes it
 * (its `socketOnError`): a status line if no answer has begun on the socket (408 past
 * a timeout, 431 for headers too large, 400 otherwise), then the socket closed.
 * A listener replaces that, so ours does it too.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Socket, inProgress: ServerResponse | undefined): void {
  if (socket.writable && !inProgress?.headersSent) {
    const status =
      error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? '408 Request Timeout'
      : error.code === 'HPE_HEADER_OVERFLOW' ? '431 Request Header Fields Too Large'
      : error.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW' ? '413 Payload Too Large'
      : '400 Bad Request';
    socket.write(`HTTP/1.1 ${status}\r\nConnection: close\r\n\r\n`);
  }
  socket.destroy(error);
}
