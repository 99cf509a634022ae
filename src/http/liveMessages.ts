/**
 * The messages of one WebSocket connection on their way to graphql-ws: parsed once,
 * bounded (a subscription id's length), trimmed (a subscription keeps its query,
 * operation name and variables, nothing else it was sent; a `connection_init` only
 * the headers identity reads), and kept in order per id (a subscribe that reuses an
 * id waits for the end of the one it replaces).
 *
 * graphql-ws keeps what it is handed: a `connection_init`'s payload as the
 * connection's `connectionParams`, a subscribe's message (payload included) in the
 * closure that runs its subscription. So the raw text is dropped once parsed, and
 * what is handed on is a new object holding only what is needed: of a subscribe, its
 * id and operation name, with an empty query. Its query text and variables are held
 * beside it (on its flow) for the subscribe hook to take (`SocketExtra.takeSubscribe`),
 * which keeps the document once per text and only the coerced values of the declared
 * variables; graphql-ws runs what that hook returns, never the payload's query.
 */
import { CloseCode, MessageType } from 'graphql-ws';
import type { Logger } from '../observability/logger';

/**
 * Hands one message to graphql-ws (`handle` drops it once the connection closed). A
 * subscribe is bounded (its id's length) and trimmed to what a subscription needs;
 * one that reuses the id of a subscribe the client completed while it was still
 * being set up waits for that one's end, so graphql-ws never holds two subscriptions
 * under one id (the first would outlive its connection).
 */
export function receive(
  data: string,
  handle: (data: unknown) => Promise<void>,
  flows: Map<string, Flow>,
  close: (code: number, reason: string) => void,
  options: {
    readonly logger: Logger;
    /** The longest subscription id (`limits.socket.subscriptionIdChars`). */
    readonly subscriptionIdChars: number;
    readonly connectionParams?: (payload: unknown) => Record<string, unknown> | undefined;
    /**
     * Called once the message is let go of (http/liveInbox.ts counts it held until
     * then): a subscribe's body once the subscribe hook took it or its handling
     * settled, any other message once graphql-ws settled it.
     */
    readonly handled?: () => void;
  },
): void {
  const { logger, subscriptionIdChars, connectionParams = () => undefined, handled = () => undefined } = options;
  let message: unknown;
  try {
    message = JSON.parse(data);
  } catch {
    handled();
    return close(CloseCode.BadRequest, 'Invalid message received');
  }
  const dispatch = (what: unknown) =>
    handle(what).catch((error: unknown) => {
      logger.error({ err: error }, 'live: a message could not be handled');
      close(CloseCode.InternalServerError, 'Internal server error');
    });
  /** Handed to graphql-ws, and let go of once it settled it. */
  const hand = (what: unknown) => void dispatch(what).finally(handled);
  if (isObject(message) && message.type === MessageType.ConnectionInit) {
    // Only what identity reads: graphql-ws keeps the payload for the connection's life.
    const params = connectionParams(message.payload);
    return hand({ type: message.type, ...(params && { payload: params }) });
  }
  if (!isObject(message) || typeof message.id !== 'string') return hand(message);
  const id = message.id;
  if (id.length > subscriptionIdChars) {
    handled();
    return close(CloseCode.BadRequest, `a subscription id is at most ${subscriptionIdChars} characters`);
  }
  const flow = flows.get(id);
  if (message.type === MessageType.Complete) {
    if (flow) flow.completed = true;
    return hand(message);
  }
  if (message.type !== MessageType.Subscribe) return hand(message);
  if (flow && !flow.completed) return hand(message); // graphql-ws closes it (4409): the id is in use
  if (flow?.waiting) {
    handled();
    return close(CloseCode.SubscriberAlreadyExists, `Subscriber for ${id.slice(0, 40)} already exists`);
  }
  // The body is held on the flow (`takeSubscribe`), never in a variable the closures
  // below capture: they live as long as the subscription, and would keep it.
  const { payload, body } = trimmedPayload(message.payload);
  const trimmed = { id, type: message.type, payload };
  const next: Flow = { completed: false, waiting: flow !== undefined, done: Promise.resolve(), body, handled };
  // In the map before graphql-ws is handed the subscribe: its hook takes the body at once.
  flows.set(id, next);
  next.done = (flow ? flow.done.then(() => ((next.waiting = false), dispatch(trimmed))) : dispatch(trimmed)).finally(() => {
    handled();
    if (flows.get(id) === next) flows.delete(id);
  });
}

/** A subscribe handed to graphql-ws, until its subscription ended. */
export interface Flow {
  /** The client completed it (the id may be subscribed again, once this one ended). */
  completed: boolean;
  /** It waits for an earlier subscription of its id to end. */
  waiting: boolean;
  done: Promise<void>;
  /** Its query text and variables until the subscribe hook takes them (`takeSubscribe`). */
  body: SubscribeBody | undefined;
  /** Tells the inbox the message is let go of (once the body is taken, or its handling settled). */
  readonly handled: () => void;
}

/** The body of subscribe `id` (once: it is let go of as it is given), from the flows of its connection. */
export function takeSubscribe(flows: ReadonlyMap<string, Flow>, id: string): SubscribeBody | undefined {
  const flow = flows.get(id);
  const body = flow?.body;
  if (flow) {
    flow.body = undefined;
    flow.handled();
  }
  return body;
}

/** A subscribe's query text and variables, as sent, until the subscribe hook takes them. */
export interface SubscribeBody {
  readonly query: unknown;
  readonly variables: unknown;
}

/**
 * What graphql-ws is handed of a subscribe's payload (its operation name, an empty query
 * when one was sent: graphql-ws checks it is a string), and its body, held beside it;
 * nothing else sent (extensions, anything else). A payload graphql-ws refuses (no
 * object, a query that is no string, variables that are no object) is handed on as it
 * is: graphql-ws closes its connection (4400).
 */
function trimmedPayload(payload: unknown): { payload: unknown; body?: SubscribeBody } {
  if (!isObject(payload) || typeof payload.query !== 'string' || (payload.variables != null && typeof payload.variables !== 'object')) return { payload };
  return {
    payload: { query: '', ...(payload.operationName !== undefined && { operationName: payload.operationName }) },
    body: { query: payload.query, variables: payload.variables },
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
