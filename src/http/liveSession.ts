/**
 * One subscription over HTTP (SSE, multipart or Apollo's callback protocol, the routers'
 * subgraph protocols besides graphql-ws) run through the subscribe gate exactly as a
 * graphql-ws subscribe is: the gate's hooks are called in graphql-ws's order on a
 * connection of one subscription (`onConnect` with the request's headers, `onSubscribe`,
 * `subscribe`, `onNext` per result, `onComplete`, `onClose`). So identity, the document
 * check, cost, the company rate, variable bytes, the hub's bounds, the identity recheck,
 * the refusal table and its metrics are the WebSocket's, and every subscriber, whatever
 * its protocol, is one more subscriber of the hub's one poller per company and list.
 *
 * The connection is a gateway's (`GateExtra.gateway`): a refused identity is the
 * subscription's one result (`UNAUTHENTICATED`, `FORBIDDEN`), never a close, since an
 * HTTP answer has no close code.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { ExecutionArgs, ExecutionResult, FormattedExecutionResult } from 'graphql';
import type { Context, SubscribePayload } from 'graphql-ws';
import type { GateExtra, LiveTransport, SubscribeGate } from '../graphql/admission/subscribeGate';

export type { LiveTransport };

/** A subscription as POSTed: its text and variables as sent (the gate checks them). */
export interface SubscriptionRequest {
  readonly query: unknown;
  readonly variables: unknown;
  readonly operationName: unknown;
}

/** The subscription's one result when the gate refused it, else its results until it ends. */
export type OpenedSubscription = { readonly refused: FormattedExecutionResult } | { readonly results: SubscriptionResults };

export interface SubscriptionResults {
  /** The next result, formatted as a graphql-ws `next` carries it; undefined once it ended. */
  next(): Promise<FormattedExecutionResult | undefined>;
  /** Ends it (its client went, or its router said it no longer knows it); its slots are free at once. */
  end(): void;
}

const ID = '1';

/**
 * Opens one subscription through `gate` with the identity `headers` carry. Resolves
 * once the gate accepted or refused it (no change is waited for).
 */
export async function openSubscription(gate: SubscribeGate, headers: IncomingHttpHeaders, request: SubscriptionRequest, transport: LiveTransport): Promise<OpenedSubscription> {
  let body: { query: unknown; variables: unknown } | undefined = {
    query: request.query,
    variables: request.variables ?? undefined,
  };
  const extra: GateExtra = {
    takeHeaders: () => headers,
    // A gateway's connection is never closed by the gate for an identity; past its
    // refusal bound (one subscription here) there is nothing left to close.
    close: () => undefined,
    gateway: true,
    takeSubscribe: () => {
      const taken = body;
      body = undefined;
      return taken;
    },
    transport,
  };
  // What the gate reads of a graphql-ws context: a key for its connection, and `extra`.
  const ctx = {
    connectionInitReceived: true,
    acknowledged: true,
    subscriptions: {},
    extra,
  } as unknown as Context<Record<string, unknown> | undefined, GateExtra>;
  const payload: SubscribePayload = {
    query: '',
    ...(typeof request.operationName === 'string' && {
      operationName: request.operationName,
    }),
  };
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    void gate.onClose(ctx);
  };
  try {
    await gate.onConnect(ctx);
    const args = (await gate.onSubscribe(ctx, ID, payload)) as ExecutionArgs;
    const format = async (result: ExecutionResult): Promise<FormattedExecutionResult> => ((await gate.onNext(ctx, ID, payload, args, result)) ?? result) as FormattedExecutionResult;
    const outcome = await gate.subscribe(args);
    if (!isAsyncIterable(outcome)) {
      const refused = await format(outcome);
      close();
      return { refused };
    }
    const iterator = outcome[Symbol.asyncIterator]();
    let ended = false;
    const finish = () => {
      if (ended) return;
      ended = true;
      void gate.onComplete(ctx, ID, payload);
      close();
    };
    return {
      results: {
        async next() {
          if (ended) return undefined;
          const step = await iterator.next();
          if (step.done || ended) {
            finish();
            return undefined;
          }
          return format(step.value);
        },
        end() {
          if (ended) return;
          finish();
          void iterator.return?.();
        },
      },
    };
  } catch (error) {
    close();
    throw error;
  }
}

function isAsyncIterable(value: unknown): value is AsyncIterable<ExecutionResult> {
  return typeof value === 'object' && value !== null && Symbol.asyncIterator in value;
}
