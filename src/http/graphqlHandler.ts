import type { IncomingMessage, ServerResponse } from 'node:http';
import { HeaderMap, type ApolloServer } from '@apollo/server';
import { createContext, type ContextServices, type GraphQLContext } from '../graphql/data/context';
import type { RequestRecord } from '../upstream/observer';
import { sendGraphQLError } from './respond';
import type { SharedRequests } from './sharedRequests';

export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * The most request-body bytes all requests in flight may hold together. A body is read
 * whole before it is parsed, and its text, its parsed JSON and a shared request's key
 * stay until the answer is out; without this, slow clients each sending a body near
 * MAX_BODY_BYTES add up (400 of them took a replica to 472 MiB RSS, past the
 * Kubernetes example's 512Mi limit with everything else). A body's bytes count from its
 * first chunk until its response closes. Past the bound a request is answered 503
 * SERVICE_UNAVAILABLE with Retry-After, and the others go on.
 */
export const MAX_BUFFERED_BODY_BYTES = 64 * 1024 * 1024;

/**
 * The most GraphQL requests one replica serves at once (each holds its context, its
 * signal and timer, and its upstream wait). Past it: 503 SERVICE_UNAVAILABLE with
 * `Retry-After: 1`, at once. 2 000 is well above what the autoscaler's target lets
 * reach a replica, and below what runs it out of its 256 MiB heap.
 */
export const MAX_REQUESTS_IN_FLIGHT = 2_000;

/**
 * How long an answer may take to leave once written: a client that stops reading
 * would otherwise keep its buffered answer (up to the response size bound) for ever.
 * Past it the connection is destroyed.
 */
export const RESPONSE_WRITE_TIMEOUT_MS = 30_000;

export interface GraphQLHandlerOptions {
  readonly apollo: ApolloServer<GraphQLContext>;
  readonly services: ContextServices;
  /** The most upstream time one request may use, in ms; its signal aborts after that. */
  readonly budgetMs: number;
  /** Identical requests in flight share one execution (its plugin must be among Apollo's). */
  readonly sharing?: SharedRequests;
  /** Default MAX_REQUESTS_IN_FLIGHT. */
  readonly maxRequestsInFlight?: number;
  /** Default RESPONSE_WRITE_TIMEOUT_MS. */
  readonly writeTimeoutMs?: number;
  /** Default MAX_BUFFERED_BODY_BYTES. */
  readonly maxBufferedBodyBytes?: number;
  /** Told the request-body bytes held whenever they change (the `wfs_graphql_request_body_bytes` gauge). */
  readonly onBodyBytes?: (held: number) => void;
  /** Told each request answered 503 for a bound (the `wfs_graphql_requests_refused_total` counter). */
  readonly onRefused?: (reason: 'body_bytes' | 'in_flight') => void;
}

/**
 * The client closed the connection while sending its body: its outcome, not a fault of
 * ours, so the routes count it with the other aborts and log it at debug (anyone can
 * cause it at will; an error line with a stack each time would let them fill the log).
 */
export class ClientAbortedError extends Error {
  override readonly name = 'ClientAbortedError';
}

/** Serves one GraphQL request over node:http; rejects only on a fault of our own (or with ClientAbortedError). */
export type GraphQLHandler = (req: IncomingMessage, res: ServerResponse, record?: RequestRecord) => Promise<void>;

/**
 * Apollo Server's documented integration path, as one function a request runs
 * through from top to bottom: read the body, build the request's signal and
 * context, execute, write the answer. Hooks that wrap a request (a logging context,
 * a trace span) go around the body of `handle`.
 */
export function createGraphQLHandler(options: GraphQLHandlerOptions): GraphQLHandler {
  const { apollo, services, budgetMs, sharing } = options;
  const maxInFlight = options.maxRequestsInFlight ?? MAX_REQUESTS_IN_FLIGHT;
  const writeTimeoutMs = options.writeTimeoutMs ?? RESPONSE_WRITE_TIMEOUT_MS;
  const buffered = new BodyBytes(options.maxBufferedBodyBytes ?? MAX_BUFFERED_BODY_BYTES, options.onBodyBytes);
  let inFlight = 0;
  return async function handle(req, res, record) {
    if (inFlight >= maxInFlight) {
      options.onRefused?.('in_flight');
      res.setHeader('connection', 'close');
      res.setHeader('retry-after', '1');
      return sendGraphQLError(res, 503, 'SERVICE_UNAVAILABLE', 'the server is serving too many requests at once; retry in a moment');
    }
    inFlight += 1;
    // What the request gives back when its response closes, in one listener: an `on`,
    // not a `once` (close comes once, and `once` wraps each listener in two objects
    // more), and one, not three: all of it lives through the upstream wait.
    const ends: RequestEnds = { bodyBytes: 0, budget: undefined, controller: undefined };
    res.on('close', () => {
      inFlight -= 1;
      if (ends.bodyBytes > 0) buffered.give(ends.bodyBytes);
      if (ends.budget) clearTimeout(ends.budget);
      if (ends.controller && !res.writableFinished) ends.controller.abort();
    });
    let body: unknown;
    let text: string | null = null;
    if (req.method === 'POST') {
      const read = await readBody(req, res, buffered, ends, options.onRefused);
      if (read === TOO_LARGE || read === BUSY) {
        // A body not read to its end: the connection closes after this answer.
        if (!req.complete) res.setHeader('connection', 'close');
        if (read === BUSY) {
          res.setHeader('retry-after', '1');
          return sendGraphQLError(res, 503, 'SERVICE_UNAVAILABLE', 'the server is reading too many request bodies at once; retry in a moment');
        }
        return sendGraphQLError(res, 413, 'BAD_REQUEST', `request body larger than ${MAX_BODY_BYTES} bytes; send a smaller document`);
      }
      text = read;
      if ((req.headers['content-type'] ?? '').includes('application/json')) {
        try {
          body = text === '' ? {} : JSON.parse(text);
        } catch {
          return sendGraphQLError(res, 400, 'BAD_REQUEST', 'the request body is not valid JSON');
        }
      } else body = text;
    }

    const signal = requestSignal(res, budgetMs, ends);
    const url = req.url ?? '/';
    const query = url.indexOf('?');
    const context = createContext(services, req.headers, signal, record);
    const shared = sharing && text !== null && query === -1 && typeof body === 'object' && !Array.isArray(body) ? await sharing.begin(context, text, req.headers) : undefined;
    let response;
    try {
      response = await apollo.executeHTTPGraphQLRequest({
        httpGraphQLRequest: { method: req.method ?? 'GET', headers: headerMap(req), search: query === -1 ? '' : url.slice(query), body },
        context: async () => context,
      });
    } finally {
      shared?.();
      // The answer is worked out (unless it comes in parts, below): the request's data lets go.
      if (response?.body.kind !== 'chunked') context.release();
    }

    const headers: Record<string, string> = {};
    for (const [name, value] of response.headers) headers[name] = value;
    if (response.body.kind === 'complete') {
      // With its length the answer goes out as one write; without it, node:http frames it
      // as chunked (headers, chunk size, body, terminator: a writev of four buffers).
      const text = response.body.string;
      headers['content-length'] = String(Buffer.byteLength(text));
      res.writeHead(response.status ?? 200, headers);
      res.end(text);
      endWithin(res, writeTimeoutMs);
      return;
    }
    try {
      res.writeHead(response.status ?? 200, headers);
      for await (const chunk of response.body.asyncIterator) res.write(chunk);
      res.end();
      endWithin(res, writeTimeoutMs);
    } finally {
      context.release();
    }
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

/** What the handler's close listener releases (see `handle`). */
interface RequestEnds {
  /** Request-body bytes counted against the bound until the response closes. */
  bodyBytes: number;
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

/** The request's headers as Apollo's HeaderMap (lower-case names, repeated values joined). */
function headerMap(req: IncomingMessage): HeaderMap {
  const headers = new HeaderMap();
  const source = req.headers;
  for (const name in source) {
    const value = source[name];
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return headers;
}

/** A body that declares a length within MAX_BODY_BYTES: reading it to its end costs no memory (its bytes are dropped). */
function drainable(req: IncomingMessage): boolean {
  const length = Number(req.headers['content-length']);
  return Number.isInteger(length) && length <= MAX_BODY_BYTES;
}

/** What `readBody` answers instead of the text: a body over MAX_BODY_BYTES, or no room among the bodies being read. */
const TOO_LARGE = Symbol('too large');
const BUSY = Symbol('busy');

/** The request-body bytes held by all requests being read, against their bound. */
class BodyBytes {
  private held = 0;
  constructor(
    private readonly max: number,
    private readonly onChange: (held: number) => void = () => undefined,
  ) {}
  /** Holds `bytes` more if they fit. */
  take(bytes: number): boolean {
    if (this.held + bytes > this.max) return false;
    this.held += bytes;
    this.onChange(this.held);
    return true;
  }
  give(bytes: number): void {
    if (bytes === 0) return;
    this.held -= bytes;
    this.onChange(this.held);
  }
}

/**
 * The request body as text; TOO_LARGE past MAX_BODY_BYTES, BUSY when the bodies of the
 * requests in flight already hold `buffered`'s bound. A body read whole keeps its bytes
 * counted until `res` closes (its text, its parsed JSON and a sharing key live that
 * long); a refused or abandoned one gives them back at once. Read with stream events,
 * not `for await`: an async iterator over the request costs more than the small bodies it reads.
 */
function readBody(
  req: IncomingMessage,
  res: ServerResponse,
  buffered: BodyBytes,
  ends: RequestEnds,
  onRefused?: (reason: 'body_bytes') => void,
): Promise<string | typeof TOO_LARGE | typeof BUSY> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = (outcome: typeof TOO_LARGE | typeof BUSY) => {
      cleanup();
      release();
      if (outcome === BUSY) onRefused?.('body_bytes');
      if (outcome === BUSY && drainable(req)) {
        // A body of a size we accept is read to its end and dropped, nothing kept, before
        // the answer: a client still sending would otherwise meet a connection reset
        // and lose the answer that tells it to retry.
        const done = () => resolve(outcome);
        req.once('end', done).once('close', done).once('error', done);
        req.resume();
        return;
      }
      // The rest is not read: the answer ends the exchange.
      resolve(outcome);
    };
    const onData = (chunk: Buffer) => {
      if (size + chunk.length > MAX_BODY_BYTES) return stop(TOO_LARGE);
      if (!buffered.take(chunk.length)) return stop(BUSY);
      size += chunk.length;
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      const text = chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
      // The bytes stay counted until the response closes (the handler's close listener
      // gives them back; none of the closures here is kept through the upstream wait).
      if (res.closed) release();
      else ends.bodyBytes = size;
      chunks.length = 0;
      resolve(text);
    };
    // node:http ends the body stream with `aborted` (ECONNRESET) or closes it early when the client goes away.
    const onError = (error: NodeJS.ErrnoException) => {
      cleanup();
      release();
      reject(req.destroyed || error.code === 'ECONNRESET' ? new ClientAbortedError('the client closed the connection while sending its body') : error);
    };
    const onClose = () => {
      if (req.complete) return;
      cleanup();
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
      buffered.give(size);
      size = 0;
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}
