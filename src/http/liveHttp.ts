/**
 * Live updates over HTTP on `POST /graphql`, the subgraph protocols routers speak besides
 * graphql-ws (docs/live.md, "Gateways"), chosen by the request:
 *
 * - `extensions.subscription` in the body: Apollo's HTTP callback protocol
 *   (`callback/1.0`, http/liveCallback.ts), what Apollo Router's callback mode and Hive
 *   Gateway's `http-callback` transport send;
 * - `Accept` naming `subscriptionSpec` (`multipart/mixed;subscriptionSpec=1.0`): Apollo's
 *   multipart subscriptions, what Hive Router prefers and Apollo Client's HttpLink sends;
 * - `Accept: text/event-stream`: GraphQL over SSE in graphql-sse's distinct connections
 *   mode (events `next` and `complete`), what Hive Gateway's and Cosmo's HTTP transports
 *   send.
 *
 * Only a subscription operation is served here; a query or mutation with any of these
 * goes on to Apollo Server as before. Each subscription runs through the subscribe gate
 * (liveSession.ts), one admission for every protocol. A stream carries a heartbeat (a
 * comment line in SSE, an empty `{}` part in multipart) so proxies and routers see it
 * alive, ends when the client goes, and is dropped when its client stops reading
 * (more than the WebSocket's `bufferedBytes` waiting), as a WebSocket is.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { getOperationAST, parse, type FormattedExecutionResult } from 'graphql';
import type { SubscribeGate } from '../graphql/admission/subscribeGate';
import type { Logger } from '../observability/logger';
import type { LiveCallbacks } from './liveCallback';
import { openSubscription, type LiveTransport, type SubscriptionResults } from './liveSession';
import { dropLargestUntilWithin } from './unreadAnswers';

export interface LiveHttpOptions {
  readonly gate: SubscribeGate;
  /** How often a stream's heartbeat is written, in ms (the WebSocket's ping interval). */
  readonly heartbeatMs: number;
  /** A stream whose client leaves more than this unread is dropped (the WebSocket's bound). */
  readonly bufferedBytes: number;
  /**
   * What the streams and the WebSocket connections together may leave unread (the memory
   * account's one row for answers not yet read, `socket.bufferedBytesPerReplica`); past it
   * the streams holding the most are dropped until the rest fit (checked every second).
   */
  readonly bufferedBytesPerReplica: number;
  /** What the WebSocket connections hold unread now (http/liveSocket.ts). */
  readonly socketsBuffered: () => number;
  /** The query limits' token bound: a document is parsed at most this far to learn its operation's type. */
  readonly maxTokens: number;
  readonly slowConsumerDropped: () => void;
  /** Apollo's callback protocol; undefined: served by nobody (a callback request goes to Apollo Server). */
  readonly callbacks?: LiveCallbacks;
  readonly logger: Logger;
}

/** Serves `body` as a subscription over HTTP if it is one for a live transport (true), else leaves the request alone (false). */
export type LiveHttp = (req: IncomingMessage, res: ServerResponse, body: unknown, streaming?: () => void) => Promise<boolean>;

/** How a stream's results are framed on the wire. */
interface Framing {
  readonly headers: Record<string, string>;
  readonly start: string;
  next(result: FormattedExecutionResult): string;
  readonly heartbeat: string;
  readonly end: string;
}

const SSE: Framing = {
  headers: { 'content-type': 'text/event-stream; charset=utf-8' },
  start: ':\n\n',
  next: (result) => `event: next\ndata: ${JSON.stringify(result)}\n\n`,
  heartbeat: ':\n\n',
  end: 'event: complete\ndata:\n\n',
};

/** Apollo's multipart subscription format: each part `{"payload": result}`, `{}` a heartbeat. */
const MULTIPART: Framing = {
  headers: {
    'content-type': 'multipart/mixed;boundary="graphql";subscriptionSpec="1.0"',
  },
  start: '\r\n--graphql',
  next: (result) => `\r\ncontent-type: application/json; charset=utf-8\r\n\r\n${JSON.stringify({ payload: result })}\r\n--graphql`,
  heartbeat: '\r\ncontent-type: application/json; charset=utf-8\r\n\r\n{}\r\n--graphql',
  end: '--\r\n',
};

export function createLiveHttp(options: LiveHttpOptions): LiveHttp {
  const streams = new Set<ServerResponse>();
  let check: NodeJS.Timeout | undefined;
  const track = (res: ServerResponse) => {
    streams.add(res);
    check ??= setInterval(() => dropOverReplica(streams, options), BUFFER_CHECK_MS).unref();
    res.once('close', () => {
      streams.delete(res);
      if (streams.size === 0 && check) check = void clearInterval(check);
    });
  };
  return async (req, res, body, streaming) => {
    const transport = transportOf(req, body);
    if (!transport || !isObject(body) || !isSubscription(body, options.maxTokens)) return false;
    if (transport === 'callback') {
      if (!options.callbacks) return false;
      await options.callbacks.subscribe(req, res, body);
      return true;
    }
    const opened = await openSubscription(
      options.gate,
      req.headers,
      {
        query: body.query,
        variables: body.variables,
        operationName: body.operationName,
      },
      transport,
    );
    const framing = transport === 'sse' ? SSE : MULTIPART;
    if ('refused' in opened) {
      // The refusal is the stream's one result, as over graphql-ws: `next`, then the end.
      res.writeHead(200, { ...framing.headers, 'cache-control': 'no-store' });
      res.end(framing.start + framing.next(opened.refused) + framing.end);
      return true;
    }
    // From here the request bounds no longer hold it: the live bounds do.
    streaming?.();
    track(res);
    await stream(res, opened.results, framing, options);
    return true;
  };
}

/** How often the streams' unread bytes are checked against the replica's bound, in ms (the WebSocket's interval). */
const BUFFER_CHECK_MS = 1_000;

/** Past the replica's bound for unread answers (streams and WebSocket connections together), drops the streams holding the most until the rest fit (exported for its unit test). */
export function dropOverReplica(streams: ReadonlySet<ServerResponse>, options: LiveHttpOptions): void {
  let total = options.socketsBuffered();
  for (const res of streams) total += res.writableLength;
  dropLargestUntilWithin(streams, total, options.bufferedBytesPerReplica, (res) => res.writableLength, (res) => {
    options.slowConsumerDropped();
    options.logger.debug({ bufferedBytes: res.writableLength }, 'live: an HTTP subscription whose client did not read was dropped');
    res.destroy();
  });
}

/** The live transport `body` asks for, by its extensions and the request's `Accept`. */
export function transportOf(req: IncomingMessage, body: unknown): Exclude<LiveTransport, 'ws'> | undefined {
  if (isObject(body) && isObject(body.extensions) && body.extensions.subscription !== undefined) return 'callback';
  const accept = (req.headers.accept ?? '').toLowerCase();
  if (accept.includes('subscriptionspec')) return 'multipart';
  if (accept.includes('text/event-stream')) return 'sse';
  return undefined;
}

/**
 * Whether `body` names a subscription operation. A document that does not parse counts
 * as one (the gate answers it with its parse error, in the transport's own shape).
 */
function isSubscription(body: Record<string, unknown>, maxTokens: number): boolean {
  if (typeof body.query !== 'string') return true;
  try {
    const operation = getOperationAST(parse(body.query, { noLocation: true, maxTokens }), typeof body.operationName === 'string' ? body.operationName : undefined);
    return !operation || operation.operation === 'subscription';
  } catch {
    return true;
  }
}

/** Writes `results` to `res` framed, with heartbeats, until they end or the client goes. */
async function stream(res: ServerResponse, results: SubscriptionResults, framing: Framing, options: LiveHttpOptions): Promise<void> {
  res.writeHead(200, {
    ...framing.headers,
    'cache-control': 'no-store',
    'x-accel-buffering': 'no',
  });
  const gone = () => results.end();
  res.on('close', gone);
  // A client that does not read: past the bound, dropped, its subscription ended.
  const write = (chunk: string): boolean => {
    if (res.destroyed || res.writableEnded) return false;
    res.write(chunk);
    if (res.writableLength <= options.bufferedBytes) return true;
    options.slowConsumerDropped();
    options.logger.debug({ bufferedBytes: res.writableLength }, 'live: an HTTP subscription whose client did not read was dropped');
    res.destroy();
    return false;
  };
  write(framing.start);
  const heartbeat = setInterval(() => write(framing.heartbeat), options.heartbeatMs);
  heartbeat.unref();
  try {
    for (let result = await results.next(); result; result = await results.next()) {
      if (!write(framing.next(result))) return;
    }
    if (write(framing.end)) res.end();
  } finally {
    clearInterval(heartbeat);
    res.off('close', gone);
    results.end();
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
