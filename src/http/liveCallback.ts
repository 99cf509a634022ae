/**
 * Apollo's HTTP callback protocol for subscriptions (`callback/1.0`), what Apollo
 * Router's callback mode and Hive Gateway's `http-callback` transport speak: the
 * router POSTs the subscription with `extensions.subscription` (`callbackUrl`,
 * `subscriptionId`, `verifier`, `heartbeatIntervalMs`); this replica admits it through
 * the subscribe gate (liveSession.ts, the WebSocket's admission), POSTs `check` to the
 * callback URL, answers the subscription request (`{"data":null}`), then POSTs `next`
 * per change, `check` as a heartbeat while nothing else is sent, and `complete` at the
 * end. A 404 (or any 4xx) from the router ends the subscription: it no longer knows it.
 *
 * A callback URL is an outbound request its caller chooses, so it is bounded before
 * anything is sent (graphql/admission/callbackGate.ts: the allowed origins, the
 * extension's shape, callbacks per router), from a caller with the router secret when
 * one is set (routes.ts refuses the rest before the body is read); each POST within
 * `callbackTimeoutMs` and retried at most `callbackRetries` times (5xx, 429, no answer),
 * redirects never followed (a 3xx is the router's refusal). A refusal is the request's
 * answer, with its code, counted and logged, and sends nothing.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import type { FormattedExecutionResult } from 'graphql';
import { Agent, request } from 'undici';
import type { LiveLimits } from '../config';
import { createCallbackGate, type Callback, type CallbackRefusal } from '../graphql/admission/callbackGate';
import type { RefusalReason } from '../graphql/admission/refusals';
import type { LiveTransport, SubscribeGate } from '../graphql/admission/subscribeGate';
import type { Logger } from '../observability/logger';
import { sendJson } from './respond';
import { openSubscription, type SubscriptionResults } from './liveSession';

export type CallbackLimits = Pick<LiveLimits, 'callbacksPerRouter' | 'callbackRetries' | 'callbackTimeoutMs'>;

export interface LiveCallbackOptions {
  readonly gate: SubscribeGate;
  /** The origins callback URLs may name (`scheme://host:port`, WFS_SUBSCRIPTION_CALLBACK_ALLOW). */
  readonly allow: readonly string[];
  readonly limits: CallbackLimits;
  /** Counts a refusal (the Observer port's `refused`). */
  readonly refused: (reason: RefusalReason, transport?: LiveTransport) => void;
  readonly logger: Logger;
}

export interface LiveCallbacks {
  /** Serves one callback subscription request (its body parsed, `extensions.subscription` present). */
  subscribe(req: IncomingMessage, res: ServerResponse, body: Record<string, unknown>): Promise<void>;
  /** Open callback subscriptions. */
  readonly open: number;
  /** Ends every callback subscription (each router is sent `complete`), and waits for their last POSTs. */
  close(): Promise<void>;
}

type Outcome = 'ok' | 'gone' | 'failed';

export function createLiveCallbacks(options: LiveCallbackOptions): LiveCallbacks {
  const { limits, logger } = options;
  const admission = createCallbackGate(options.allow, limits.callbacksPerRouter);
  const running = new Set<{ readonly results: SubscriptionResults; readonly done: Promise<void> }>();
  // Its own connections, closed with the server; undici never follows a redirect unless asked.
  const agent = new Agent({ connections: 64, headersTimeout: limits.callbackTimeoutMs, bodyTimeout: limits.callbackTimeoutMs });
  let closing = false;
  const refuse = (res: ServerResponse, { reason, errors, origin }: CallbackRefusal) => {
    options.refused(reason, 'callback');
    logger.warn({ reason, ...(origin && { origin }) }, 'live: a callback subscription was refused');
    sendJson(res, 200, { data: null, errors });
  };
  const post = poster(agent, limits, logger, () => closing);

  return {
    get open() {
      return running.size;
    },
    async subscribe(req, res, body) {
      const admitted = admission.admit((body.extensions as Record<string, unknown>).subscription, closing);
      if ('reason' in admitted) return refuse(res, admitted);
      const { callback, release } = admitted;
      let opened;
      try {
        opened = await openSubscription(
          options.gate,
          req.headers,
          {
            query: body.query,
            variables: body.variables,
            operationName: body.operationName,
          },
          'callback',
        );
      } catch (error) {
        release();
        throw error;
      }
      // Refused by the gate: the answer says so, and nothing is sent to the router.
      if ('refused' in opened) {
        release();
        return sendJson(res, 200, { data: null, ...opened.refused });
      }
      const checked = await post(callback, { action: 'check' });
      if (checked !== 'ok') {
        opened.results.end();
        release();
        return refuse(res, admission.checkRefused(callback, checked === 'gone'));
      }
      sendJson(res, 200, { data: null });
      const entry = { results: opened.results, done: Promise.resolve() };
      running.add(entry);
      entry.done = feed(callback, opened.results, post).finally(() => {
        running.delete(entry);
        release();
      });
    },
    async close() {
      closing = true;
      const all = [...running];
      for (const { results } of all) results.end();
      await Promise.allSettled(all.map(({ done }) => done));
      await agent.close();
    },
  };
}

/** POSTs one protocol message to a callback URL, retried on 5xx, 429 and no answer (once only while `closing`); 'gone' for any other non-2xx. */
function poster(agent: Agent, limits: CallbackLimits, logger: Logger, closing: () => boolean): (callback: Callback, message: Record<string, unknown>) => Promise<Outcome> {
  return async (callback, message) => {
    const text = JSON.stringify({
      kind: 'subscription',
      id: callback.id,
      verifier: callback.verifier,
      ...message,
    });
    const attempts = closing() ? 1 : limits.callbackRetries + 1;
    for (let attempt = 0; attempt < attempts; attempt++) {
      if (attempt > 0) await delay(100 * 2 ** (attempt - 1));
      try {
        const { statusCode, body } = await request(callback.url, {
          method: 'POST',
          dispatcher: agent,
          headers: {
            'content-type': 'application/json',
            'subscription-protocol': 'callback/1.0',
          },
          body: text,
          signal: AbortSignal.timeout(limits.callbackTimeoutMs),
        });
        await body.dump();
        if (statusCode >= 200 && statusCode < 300) return 'ok';
        if (statusCode < 500 && statusCode !== 429) return 'gone';
      } catch (error) {
        logger.debug({ err: (error as Error).message, origin: callback.url.origin }, 'live: a subscription callback POST failed');
      }
    }
    return 'failed';
  };
}

/**
 * Feeds one callback subscription: `next` per result, `check` as a heartbeat at half the
 * router's interval while nothing else was sent (a router ends a subscription that is
 * silent for its interval), `complete` at the end; a router that answers it no longer
 * knows it, or does not answer through the retries, ends it (no `complete`: it is gone).
 */
async function feed(callback: Callback, results: SubscriptionResults, post: (callback: Callback, message: Record<string, unknown>) => Promise<Outcome>): Promise<void> {
  // One POST at a time: the router reads a subscription's messages in order.
  let chain: Promise<Outcome> = Promise.resolve('ok');
  let over = false;
  let sentAt = Date.now();
  const send = (message: Record<string, unknown>): Promise<Outcome> => {
    chain = chain.then(async (previous) => {
      if (previous !== 'ok') return previous;
      sentAt = Date.now();
      const outcome = await post(callback, message);
      if (outcome !== 'ok' && !over) {
        over = true;
        results.end();
      }
      return outcome;
    });
    return chain;
  };
  const every = callback.heartbeatMs / 2;
  const heartbeat = callback.heartbeatMs > 0 ? setInterval(() => void (Date.now() - sentAt >= every && send({ action: 'check' })), every) : undefined;
  heartbeat?.unref();
  try {
    for (let result: FormattedExecutionResult | undefined = await results.next(); result && !over; result = await results.next()) {
      if ((await send({ action: 'next', payload: result })) !== 'ok') return;
    }
    if (!over) await send({ action: 'complete' });
  } finally {
    clearInterval(heartbeat);
    results.end();
  }
}
