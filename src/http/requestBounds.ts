/**
 * The bounds a GraphQL request meets before any GraphQL work (`boundRequests`), as
 * Apollo's integrations leave them to middleware in front: requests in flight (the
 * replica's, and a client address's share), its body's bytes and values, counted as
 * parsed (bodyReading.ts), and deadline, then its budget and, once the answer is
 * written, the time it may take to leave. The connections' bounds, before any request
 * is read, are connectionBounds.ts's.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestLimits } from '../config';
import { clientAddress } from '../graphql/admission/clientAddress';
import type { RequestRefusalReason } from '../graphql/admission/refusals';
import type { RequestRecord } from '../upstream/observer';
import { BodyBytes, ClientAbortedError, readBody, type AddressHold, type BodyCharge } from './bodyReading';
import { sendGraphQLError, sendRefusal } from './respond';

export { ClientAbortedError };

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
interface RequestEnds extends BodyCharge {
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
