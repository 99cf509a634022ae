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
 * what is handed on is a new object holding only what is needed (the gate takes the
 * variables and query text out of a subscribe's payload once checked).
 */
import { CloseCode, MessageType } from 'graphql-ws';
import type { Logger } from '../observability/logger';
import { MAX_SUBSCRIPTION_ID_CHARS } from './liveSocketLimits';

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
  logger: Logger,
  connectionParams: (payload: unknown) => Record<string, unknown> | undefined = () => undefined,
): void {
  let message: unknown;
  try {
    message = JSON.parse(data);
  } catch {
    return close(CloseCode.BadRequest, 'Invalid message received');
  }
  const dispatch = (what: unknown) =>
    handle(what).catch((error: unknown) => {
      logger.error({ err: error }, 'live: a message could not be handled');
      close(CloseCode.InternalServerError, 'Internal server error');
    });
  if (isObject(message) && message.type === MessageType.ConnectionInit) {
    // Only what identity reads: graphql-ws keeps the payload for the connection's life.
    const params = connectionParams(message.payload);
    return void dispatch({ type: message.type, ...(params && { payload: params }) });
  }
  if (!isObject(message) || typeof message.id !== 'string') return void dispatch(message);
  const id = message.id;
  if (id.length > MAX_SUBSCRIPTION_ID_CHARS) return close(CloseCode.BadRequest, `a subscription id is at most ${MAX_SUBSCRIPTION_ID_CHARS} characters`);
  const flow = flows.get(id);
  if (message.type === MessageType.Complete) {
    if (flow) flow.completed = true;
    return void dispatch(message);
  }
  if (message.type !== MessageType.Subscribe) return void dispatch(message);
  if (flow && !flow.completed) return void dispatch(message); // graphql-ws closes it (4409): the id is in use
  if (flow?.waiting) return close(CloseCode.SubscriberAlreadyExists, `Subscriber for ${id.slice(0, 40)} already exists`);
  const trimmed = { id, type: message.type, payload: trimmedPayload(message.payload) };
  const next: Flow = { completed: false, waiting: flow !== undefined, done: Promise.resolve() };
  next.done = (flow ? flow.done.then(() => ((next.waiting = false), dispatch(trimmed))) : dispatch(trimmed)).finally(() => {
    if (flows.get(id) === next) flows.delete(id);
  });
  flows.set(id, next);
}

/** A subscribe handed to graphql-ws, until its subscription ended. */
export interface Flow {
  /** The client completed it (the id may be subscribed again, once this one ended). */
  completed: boolean;
  /** It waits for an earlier subscription of its id to end. */
  waiting: boolean;
  done: Promise<void>;
}

/** What a subscription keeps of its subscribe: its query, operation name and variables (not extensions or anything else sent). */
function trimmedPayload(payload: unknown): unknown {
  if (!isObject(payload)) return payload;
  return {
    query: payload.query,
    ...(payload.operationName !== undefined && { operationName: payload.operationName }),
    ...(payload.variables !== undefined && { variables: payload.variables }),
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
