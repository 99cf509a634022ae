/**
 * The bounds a client meets before any GraphQL work: how a client address is counted
 * (one function for every per-address share, HTTP and WebSocket alike), the bounds on
 * connections and on the time their headers may take, and (`boundRequests`, below) a
 * request's: requests in flight, body bytes and deadline, budget, write deadline.
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
import type { IncomingMessage, Server, ServerOptions, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { DEFAULT_LIMITS, type ConnectionLimits, type RequestLimits } from '../config';
import { clientAddress } from '../graphql/admission/clientAddress';
import type { RouterGate } from '../graphql/admission/routerGate';
import type { ConnectionRefusalReason, RequestRefusalReason } from '../graphql/admission/refusals';
import { JsonUnits, heldJsonBytes } from '../memory/jsonSize';
import type { RequestRecord } from '../upstream/observer';
import { sendGraphQLError, sendRefusal } from './respond';

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

/**
 * The client closed the connection while sending its body: its outcome, not a fault of
 * ours, so the routes count it with the other aborts and log it at debug (anyone can
 * cause it at will; an error line with a stack each time would let them fill the log).
 */
export class ClientAbortedError extends Error {
  override readonly name = 'ClientAbortedError';
}

export interface RequestBoundsOptions {
  /** The bounds (`limits.request` of the configuration; config.ts says each one's default and reason). */
  readonly limits: RequestLimits;
  /** Told the request-body bytes held whenever they change (the `wfs_graphql_request_body_bytes` gauge). */
  readonly onBodyBytes?: (held: number) => void;
  /** Told each request refused before any GraphQL work, by the bound reached (the Observer port's `refused`). */
  readonly onRefused?: (reason: RequestRefusalReason) => void;
}

/**
 * Serves one GraphQL request over node:http; rejects only on a fault of our own (or
 * with ClientAbortedError). `fromRouter`: the request carried the router secret
 * (routes.ts checked it), so its address's share does not apply.
 */
export type GraphQLHandler = (req: IncomingMessage, res: ServerResponse, record?: RequestRecord, fromRouter?: boolean) => Promise<void>;

/**
 * What the bounds hand the GraphQL handler of an admitted request: its body's text (null
 * without a body: GET) and its signal. The handler takes the text (`takeText`) and lets
 * go of it once parsed: a body is held once, as its parse, not as text, parse and key.
 */
export interface AdmittedRequest {
  /** The body's text, once: later calls get null. */
  takeText(): string | null;
  /** Aborts when the client goes away before the answer is written, or when the request's budget is spent. */
  readonly signal: AbortSignal;
  /**
   * The answer is a stream that lasts (a live subscription over SSE or multipart,
   * http/liveHttp.ts): its in-flight slot, its address's hold and its body bytes are
   * given back now, not when it closes, and its budget no longer runs. The live bounds
   * (subscriptions per company and replica, connections) bound such streams instead.
   */
  readonly streaming?: () => void;
}

/** The GraphQL handler inside the bounds (graphqlHandler.ts): it writes the answer; its write deadline is the bounds'. */
export type AdmittedHandler = (req: IncomingMessage, res: ServerResponse, admitted: AdmittedRequest, record?: RequestRecord) => Promise<void>;

/**
 * The bounds a GraphQL request meets before any GraphQL work, around `handler` (as
 * Apollo's integrations leave body limits to middleware in front of them): its
 * address's share and the replica's requests in flight, its body's bytes (its
 * address's share and the replica's) and deadline, then its budget and, once the
 * answer is written, the time it may take to leave.
 */
export function boundRequests(options: RequestBoundsOptions, handler: AdmittedHandler): GraphQLHandler {
  const { limits } = options;
  const { inFlight: maxInFlight, writeTimeoutMs, bodyTimeoutMs, addressShare: share } = limits;
  const addresses = new AddressHolds(Math.max(1, Math.floor(maxInFlight * share)), Math.max(1, Math.floor(limits.bufferedBodyBytes * share)));
  const buffered = new BodyBytes(limits.bufferedBodyBytes, addresses.maxBytes, options.onBodyBytes);
  // A body refused for its bytes is counted when it is refused (readBody), though answered once drained.
  /** Answers `reason`'s refusal; counts it unless it was counted when it happened (`counted`: a body refused while it was read). */
  const refuse = (res: ServerResponse, reason: RequestRefusalReason, { counted }: { readonly counted: boolean } = { counted: false }) => {
    if (!counted) options.onRefused?.(reason);
    res.setHeader('connection', 'close');
    if (reason === 'body_timeout') return sendRefusal(res, reason, `the request body did not arrive whole within ${bodyTimeoutMs} ms; send the document at once`);
    res.setHeader('retry-after', '1');
    return sendRefusal(res, reason);
  };
  let inFlight = 0;
  return async function handle(req, res, record, fromRouter = false) {
    const address = fromRouter ? null : clientAddress(req.socket.remoteAddress);
    if (address !== null && addresses.requestsOf(address) >= addresses.maxRequests) return refuse(res, 'address_in_flight');
    if (inFlight >= maxInFlight) return refuse(res, 'in_flight');
    inFlight += 1;
    // What the request gives back when its response closes, in one listener: an `on`,
    // not a `once` (close comes once, and `once` wraps each listener in two objects
    // more), and one, not three: all of it lives through the upstream wait.
    const ends: RequestEnds = { bodyBytes: 0, hold: address === null ? null : addresses.enter(address), budget: undefined, controller: undefined };
    let held = true;
    const giveBack = () => {
      if (!held) return;
      held = false;
      inFlight -= 1;
      if (ends.bodyBytes > 0) buffered.give(ends.bodyBytes, ends.hold);
      if (ends.hold) addresses.leave(ends.hold);
      if (ends.budget) clearTimeout(ends.budget);
    };
    res.on('close', () => {
      giveBack();
      if (ends.controller && !res.writableFinished) ends.controller.abort();
    });
    const admitted = await admitBody(req, res, buffered, ends, limits, options.onRefused, refuse);
    if (!admitted) return;
    await handler(req, res, { ...admitted, streaming: giveBack }, record);
    endWithin(res, writeTimeoutMs);
  };
}

/**
 * Reads a POST's body within the bounds and answers a refusal (returning undefined), or
 * hands back what the handler is given. Its own function, so that nothing of the
 * reading (its chunks, its text) stays in the frame that waits for the answer.
 */
async function admitBody(
  req: IncomingMessage,
  res: ServerResponse,
  buffered: BodyBytes,
  ends: RequestEnds,
  limits: RequestLimits,
  onRefused: RequestBoundsOptions['onRefused'],
  refuse: (res: ServerResponse, reason: RequestRefusalReason, how?: { readonly counted: boolean }) => void,
): Promise<AdmittedRequest | undefined> {
  let text: string | null = null;
  if (req.method === 'POST') {
    const read = await readBody(req, res, buffered, ends, limits, onRefused);
    if (read.kind === 'too_large') {
      // A body not read to its end: the connection closes after this answer.
      if (!req.complete) res.setHeader('connection', 'close');
      const what = read.by === 'bytes' ? `larger than ${limits.bodyBytes} bytes` : `of more than ${limits.bodyValues} JSON values, objects and arrays`;
      sendGraphQLError(res, 413, 'BAD_REQUEST', `request body ${what}; send a smaller document`);
      return undefined;
    }
    if (read.kind === 'refused') {
      // A body not read to its end (its deadline passed, or its drain outlived it): the
      // socket goes with the answer, whatever the client still sends.
      if (!req.complete) res.once('finish', () => req.socket.destroy());
      refuse(res, read.reason, { counted: read.reason !== 'body_timeout' });
      return undefined;
    }
    text = read.text;
  }
  const signal = requestSignal(res, limits.budgetMs, ends);
  return {
    takeText() {
      const taken = text;
      text = null;
      return taken;
    },
    signal,
  };
}

/**
 * Destroys the connection if the answer, already handed to node:http, has not left
 * within `ms` (a client that stopped reading): its buffered bytes are then let go.
 */
export function endWithin(res: ServerResponse, ms: number): void {
  // Most answers are in the kernel's socket buffer by now: nothing of ours is held, no timer needed.
  if (res.writableFinished || res.destroyed || (res.socket?.writableLength ?? 0) === 0) return;
  const timer = setTimeout(() => res.destroy(), ms);
  timer.unref();
  res.once('close', () => clearTimeout(timer));
  res.once('finish', () => clearTimeout(timer));
}

/** What one client address holds: its requests in flight and their body bytes. */
interface AddressHold {
  readonly address: string;
  requests: number;
  bytes: number;
}

/**
 * The holds of the client addresses with requests in flight: at most one entry per
 * request in flight (an entry goes with its address's last request), so it is bounded
 * by the in-flight bound.
 */
class AddressHolds {
  private readonly byAddress = new Map<string, AddressHold>();
  constructor(
    readonly maxRequests: number,
    readonly maxBytes: number,
  ) {}
  requestsOf(address: string): number {
    return this.byAddress.get(address)?.requests ?? 0;
  }
  enter(address: string): AddressHold {
    let hold = this.byAddress.get(address);
    if (!hold) this.byAddress.set(address, (hold = { address, requests: 0, bytes: 0 }));
    hold.requests += 1;
    return hold;
  }
  leave(hold: AddressHold): void {
    hold.requests -= 1;
    if (hold.requests === 0) this.byAddress.delete(hold.address);
  }
}

/** What the handler's close listener releases (see `handle`). */
interface RequestEnds {
  /** Request-body bytes counted against the bound until the response closes. */
  bodyBytes: number;
  /** The client address's hold, counted until the response closes; null for the router (exempt). */
  readonly hold: AddressHold | null;
  /** The request's budget timer and controller (`requestSignal`). */
  budget: ReturnType<typeof setTimeout> | undefined;
  controller: AbortController | undefined;
}

/**
 * Aborts when the client goes away before the answer is written, or when the
 * request's upstream budget is spent. One controller and one timer per request,
 * both released when the response closes (AbortSignal.timeout plus AbortSignal.any
 * cost a timer, a signal and a dependency list each, and outlived the request).
 */
function requestSignal(res: ServerResponse, budgetMs: number, ends: RequestEnds): AbortSignal {
  const controller = new AbortController();
  // Closed already (the client left as its body ended): nothing will be written.
  if (res.closed) {
    controller.abort();
    return controller.signal;
  }
  ends.controller = controller;
  ends.budget = setTimeout(() => controller.abort(new DOMException('the request budget is spent', 'TimeoutError')), budgetMs);
  return controller.signal;
}

/** A body that declares a length within `maxBytes`: reading it to its end costs no memory (its bytes are dropped). */
function drainable(req: IncomingMessage, maxBytes: number): boolean {
  const length = Number(req.headers['content-length']);
  return Number.isInteger(length) && length <= maxBytes;
}

/**
 * What `readBody` gives: the body's text; `too_large`, a body over `limits.bodyBytes` or
 * `limits.bodyValues`; or `refused`, the body bound it met (counted by `readBody` when
 * it met it, but a deadline, which is counted with its answer).
 */
type BodyRead =
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'too_large'; readonly by: 'bytes' | 'values' }
  | { readonly kind: 'refused'; readonly reason: 'body_bytes' | 'address_body_bytes' | 'body_timeout' };
type BodyStop = Exclude<BodyRead, { kind: 'text' }>;
const TOO_LARGE = { bytes: { kind: 'too_large', by: 'bytes' }, values: { kind: 'too_large', by: 'values' } } as const satisfies Record<string, BodyStop>;
const REFUSED = {
  body_bytes: { kind: 'refused', reason: 'body_bytes' },
  address_body_bytes: { kind: 'refused', reason: 'address_body_bytes' },
  body_timeout: { kind: 'refused', reason: 'body_timeout' },
} as const satisfies Record<string, BodyStop>;

/**
 * The bytes the requests' bodies hold, counted as parsed (memory/jsonSize.ts: the text
 * and what `JSON.parse` makes of it), against their bound and each address's share of it.
 */
class BodyBytes {
  private held = 0;
  constructor(
    private readonly max: number,
    private readonly maxPerAddress: number,
    private readonly onChange: (held: number) => void = () => undefined,
  ) {}
  /**
   * Holds `bytes` more of a body that holds `own` already, for `hold`'s address (null:
   * exempt from the share), if they fit; else the bound they do not fit. An address may
   * always hold one body, however large (a body of the most values a body may have
   * counts more than a quarter of the bound): its share bounds how many at once.
   */
  take(bytes: number, own: number, hold: AddressHold | null): 'body_bytes' | 'address_body_bytes' | undefined {
    if (hold && hold.bytes + bytes > this.maxPerAddress && hold.bytes > own) return 'address_body_bytes';
    if (this.held + bytes > this.max) return 'body_bytes';
    this.held += bytes;
    if (hold) hold.bytes += bytes;
    this.onChange(this.held);
    return undefined;
  }
  give(bytes: number, hold: AddressHold | null): void {
    if (bytes === 0) return;
    this.held -= bytes;
    if (hold) hold.bytes -= bytes;
    this.onChange(this.held);
  }
}

/**
 * The request body as text; `too_large` past `bodyBytes` or `bodyValues` (its JSON's
 * structural units, counted as it arrives); refused for `body_bytes` or
 * `address_body_bytes` when the bodies of the requests in flight, or those of its
 * address, already hold their bound; `body_timeout` when it has not arrived whole
 * within `bodyTimeoutMs`. A body is charged what it may hold once parsed
 * (`heldJsonBytes`), from its first chunk until `res` closes (its parse lives that
 * long); a refused, timed-out or abandoned one gives it back at once. Read with stream
 * events, not `for await`: an async iterator over the request costs more than the small
 * bodies it reads.
 */
function readBody(
  req: IncomingMessage,
  res: ServerResponse,
  buffered: BodyBytes,
  ends: RequestEnds,
  limits: Pick<RequestLimits, 'bodyBytes' | 'bodyValues' | 'bodyTimeoutMs'>,
  onRefused?: (reason: 'body_bytes' | 'address_body_bytes') => void,
): Promise<BodyRead> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const units = new JsonUnits();
    let size = 0;
    /** What the body is charged: heldJsonBytes of its bytes and units so far. */
    let held = 0;
    /** The bound a body being drained was refused for (its answer, should the deadline come first). */
    let refused: BodyStop | undefined;
    // One deadline for the whole body, the drain of a refused one included.
    const deadline = setTimeout(() => {
      cleanup();
      release();
      resolve(refused ?? REFUSED.body_timeout);
    }, limits.bodyTimeoutMs);
    const settle = (outcome: BodyRead) => {
      clearTimeout(deadline);
      resolve(outcome);
    };
    const stop = (outcome: BodyStop) => {
      cleanup();
      release();
      if (outcome.kind === 'refused' && outcome.reason !== 'body_timeout') onRefused?.(outcome.reason);
      if (outcome.kind === 'refused' && drainable(req, limits.bodyBytes)) {
        // A body of a size we accept is read to its end and dropped, nothing kept, before
        // the answer: a client still sending would otherwise meet a connection reset
        // and lose the answer that tells it to retry (the deadline still applies).
        refused = outcome;
        const done = () => settle(outcome);
        req.once('end', done).once('close', done).once('error', done);
        req.resume();
        return;
      }
      // The rest is not read: the answer ends the exchange.
      settle(outcome);
    };
    const onData = (chunk: Buffer) => {
      if (size + chunk.length > limits.bodyBytes) return stop(TOO_LARGE.bytes);
      units.add(chunk);
      if (units.units > limits.bodyValues) return stop(TOO_LARGE.values);
      const charge = heldJsonBytes(size + chunk.length, units.units);
      const full = buffered.take(charge - held, held, ends.hold);
      if (full) return stop(REFUSED[full]);
      held = charge;
      size += chunk.length;
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      clearTimeout(deadline);
      const text = chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
      // The bytes stay counted until the response closes (the handler's close listener
      // gives them back; none of the closures here is kept through the upstream wait).
      if (res.closed) release();
      else ends.bodyBytes = held;
      chunks.length = 0;
      resolve({ kind: 'text', text });
    };
    // node:http ends the body stream with `aborted` (ECONNRESET) or closes it early when the client goes away.
    const onError = (error: NodeJS.ErrnoException) => {
      cleanup();
      clearTimeout(deadline);
      release();
      reject(req.destroyed || error.code === 'ECONNRESET' ? new ClientAbortedError('the client closed the connection while sending its body') : error);
    };
    const onClose = () => {
      if (req.complete) return;
      cleanup();
      clearTimeout(deadline);
      release();
      reject(new ClientAbortedError('the client closed the connection while sending its body'));
    };
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const release = () => {
      buffered.give(held, ends.hold);
      held = 0;
      size = 0;
      chunks.length = 0;
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}
