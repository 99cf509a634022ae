/**
 * The bounds a client meets before its request is read: how a client address is
 * counted (one function for every per-address share, HTTP and WebSocket alike), and
 * the bounds on connections and on the time their headers may take.
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
 *   `requestTimeout`): past either, Node answers 408 and closes the connection.
 *
 * The router is exempt from the address share, but is known only by its secret, and
 * headers come after the connection: every connection counts against its address
 * until a request on it (a query's POST or an upgrade) carries the router secret,
 * and from then on it does not. So the router's pool of connections takes no share,
 * and what it has open but not yet identified (a few connections in their first
 * packet) is far below one. The replica's bound is counted by Node before any byte is
 * read, so nothing is exempt from it; it stands above what the WebSocket bound and
 * the requests in flight need together.
 */
import type { IncomingMessage, Server, ServerOptions } from 'node:http';
import type { Socket } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { RouterGate } from '../graphql/admission/routerGate';
import type { ConnectionRefusalReason } from '../graphql/admission/refusals';

/**
 * The key a client address's share is counted by: an IPv4 address as it is (an
 * IPv4-mapped IPv6 one too), an IPv6 address by its /64 prefix (ipaddr.js parses it).
 * One host or customer is given a whole /64: counted by the whole address, one /64
 * would have 2^64 shares (eight addresses of one /64 opened 8 000 WebSocket
 * connections in 3 s when the WebSocket side counted whole addresses).
 */
export function clientAddress(remote: string | undefined): string {
  if (!remote) return '';
  if (!remote.includes(':')) return remote;
  if (!ipaddr.isValid(remote)) return remote;
  const parsed = ipaddr.process(remote);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  return `${(parsed as ipaddr.IPv6).parts.slice(0, 4).map((part) => part.toString(16)).join(':')}::/64`;
}

/**
 * How often Node checks the headers and request timeouts, in ms. Its default, 30 s,
 * let a socket that never finished its headers stay up to 30 s past the deadline;
 * the check walks only the connections with a request in progress.
 */
export const CONNECTIONS_CHECKING_INTERVAL_MS = 1_000;

/** The whole-request timeout (Node's `requestTimeout`); a body has its own, shorter deadline (graphqlHandler.ts). */
export const REQUEST_TIMEOUT_MS = 60_000;

export interface ConnectionBoundsOptions {
  /** Open sockets of the replica, HTTP and WebSocket together (`WFS_MAX_CONNECTIONS`). */
  readonly maxConnections: number;
  /** Open sockets of one client address not (yet) known to be the router's (`WFS_MAX_CONNECTIONS_PER_ADDRESS`). */
  readonly connectionsPerAddress: number;
  /** How long a request's headers may take to arrive whole, in ms (`WFS_HEADERS_TIMEOUT_MS`). */
  readonly headersTimeoutMs: number;
  /** How long a whole request may take to arrive, in ms (default REQUEST_TIMEOUT_MS). */
  readonly requestTimeoutMs?: number;
  /** The router-secret decision (graphql/admission/routerGate.ts): a connection whose request carries it leaves its address's count. */
  readonly router: RouterGate;
  /** Counts a connection closed by a bound. */
  readonly refused: (reason: ConnectionRefusalReason) => void;
}

/** The options of `createServer` the bounds need (the timeout checks' interval can only be given there). */
export function boundedServerOptions(): ServerOptions {
  return { connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS };
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
  server.requestTimeout = Math.max(options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS, options.headersTimeoutMs);
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
  server.on('request', identify);
  server.on('upgrade', identify);
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') refused(inProgress(socket) ? 'request_timeout' : 'headers_timeout');
    answerClientError(error, socket);
  });
}

/** The response node:http has assigned to the socket (a request whose headers are in), if any. */
function inProgress(socket: Socket): { headersSent: boolean } | undefined {
  return (socket as Socket & { _httpMessage?: { headersSent: boolean } | null })._httpMessage ?? undefined;
}

/**
 * What node:http does with a client error when no `clientError` listener takes it
 * (its `socketOnError`): a status line if no answer has begun on the socket (408 past
 * a timeout, 431 for headers too large, 400 otherwise), then the socket closed.
 * A listener replaces that, so ours does it too.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (socket.writable && !inProgress(socket)?.headersSent) {
    const status =
      error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? '408 Request Timeout'
      : error.code === 'HPE_HEADER_OVERFLOW' ? '431 Request Header Fields Too Large'
      : error.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW' ? '413 Payload Too Large'
      : '400 Bad Request';
    socket.write(`HTTP/1.1 ${status}\r\nConnection: close\r\n\r\n`);
  }
  socket.destroy(error);
}
