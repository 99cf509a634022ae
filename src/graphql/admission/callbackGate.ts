/**
 * Callback admission: what a subscription POSTed with Apollo's callback protocol
 * (http/liveCallback.ts) must meet before anything is sent to the URL it names, and
 * each refusal as the request's answer (its reason and code from refusals.ts). A
 * callback URL is an outbound request its caller chooses: only to an origin
 * `WFS_SUBSCRIPTION_CALLBACK_ALLOW` names (unset: every callback subscription refused),
 * with a well-formed `extensions.subscription`, at most `callbacksPerRouter` open per
 * callback origin. The subscription itself then meets the subscribe gate, as every
 * protocol's does.
 */
import type { GraphQLFormattedError } from 'graphql';
import { messageOf, refusalError, type RefusalReason } from './refusals';

/** The longest callback URL, subscription id and verifier accepted, in characters. */
const MAX_URL_CHARS = 2_048;
const MAX_ID_CHARS = 128;
const MAX_VERIFIER_CHARS = 1_024;
/** The shortest heartbeat interval honoured: a router asking for less gets this. */
const MIN_HEARTBEAT_MS = 1_000;

/** A callback subscription's `extensions.subscription`, checked. */
export interface Callback {
  readonly url: URL;
  readonly id: string;
  readonly verifier: string;
  /** 0: no heartbeat. */
  readonly heartbeatMs: number;
}

/** A callback refused: its reason (counted by the caller), the errors of the request's answer, and the origin it named, if any. */
export interface CallbackRefusal {
  readonly reason: RefusalReason;
  readonly errors: readonly GraphQLFormattedError[];
  readonly origin?: string;
}

export interface CallbackGate {
  /** The checked callback and its slot of its router's bound (`release` gives it back, once), or the refusal. */
  admit(extension: unknown, closing: boolean): { readonly callback: Callback; release(): void } | CallbackRefusal;
  /** The refusal of a callback whose router did not accept its first check (`gone`: it answered it does not know it). */
  checkRefused(callback: Callback, gone: boolean): CallbackRefusal;
}

export function createCallbackGate(allow: readonly string[], callbacksPerRouter: number): CallbackGate {
  const allowed = new Set(allow.map((origin) => new URL(origin).origin));
  const perRouter = new Map<string, number>();
  const refused = (reason: RefusalReason, worded?: string, origin?: string): CallbackRefusal => ({ reason, errors: [refusalError(reason, worded).toJSON()], ...(origin && { origin }) });
  return {
    admit(extension, closing) {
      if (allowed.size === 0) return refused('callback_disabled');
      const callback = callbackOf(extension);
      if (typeof callback === 'string') return refused('callback_extension', callback);
      const origin = callback.url.origin;
      if (!allowed.has(origin)) return refused('callback_origin', undefined, origin);
      if (closing) return refused('callback_router', 'the server is shutting down; subscribe on another replica', origin);
      if ((perRouter.get(origin) ?? 0) >= callbacksPerRouter) {
        return refused('callback_router', `this replica holds ${callbacksPerRouter} callback subscriptions of this router already; retry in a moment (another replica may take it)`, origin);
      }
      // Taken at once, so a burst cannot all pass the bound.
      perRouter.set(origin, (perRouter.get(origin) ?? 0) + 1);
      let held = true;
      const release = () => {
        if (!held) return;
        held = false;
        const left = (perRouter.get(origin) ?? 1) - 1;
        if (left === 0) perRouter.delete(origin);
        else perRouter.set(origin, left);
      };
      return { callback, release };
    },
    checkRefused: (callback, gone) => refused('callback_check', `the callback URL did not accept the subscription's check (${gone ? 'it answered that it does not know it' : 'no answer'}); it was not started`, callback.url.origin),
  };
}

/** The checked `extensions.subscription`, or what is wrong with it (the refusal's message). */
function callbackOf(value: unknown): Callback | string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return messageOf('callback_extension');
  const fields = value as Record<string, unknown>;
  // The GA protocol's names; the preview's snake_case ones as Apollo Server reads them too.
  const url = fields.callbackUrl ?? fields.callback_url;
  const id = fields.subscriptionId ?? fields.subscription_id;
  const verifier = fields.verifier;
  const interval = fields.heartbeatIntervalMs ?? fields.heartbeat_interval_ms ?? 5_000;
  if (typeof url !== 'string' || url.length > MAX_URL_CHARS) return `extensions.subscription.callbackUrl must be an absolute http(s) URL of at most ${MAX_URL_CHARS} characters`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'extensions.subscription.callbackUrl is not an absolute URL';
  }
  if ((parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || parsed.username || parsed.password) return 'extensions.subscription.callbackUrl must be an http(s) URL without credentials';
  if (typeof id !== 'string' || id === '' || id.length > MAX_ID_CHARS) return `extensions.subscription.subscriptionId must be a string of 1 to ${MAX_ID_CHARS} characters`;
  if (typeof verifier !== 'string' || verifier === '' || verifier.length > MAX_VERIFIER_CHARS) return `extensions.subscription.verifier must be a string of 1 to ${MAX_VERIFIER_CHARS} characters`;
  if (typeof interval !== 'number' || !Number.isInteger(interval) || interval < 0) return 'extensions.subscription.heartbeatIntervalMs must be a whole number of ms (0: no heartbeat)';
  return { url: parsed, id, verifier, heartbeatMs: interval === 0 ? 0 : Math.max(MIN_HEARTBEAT_MS, interval) };
}
