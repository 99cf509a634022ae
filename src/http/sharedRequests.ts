import { HeaderMap, type ApolloServerPlugin, type GraphQLResponse } from '@apollo/server';
import type { GraphQLFormattedError } from 'graphql';
import { taken, type CacheDecision } from '../cache/policy';
import type { GraphQLContext } from '../graphql/data/context';
import { isMomentaryFailure } from '../graphql/errors';
import { NO_OBSERVER, type Observer } from '../upstream/observer';

/** What a request that led shares with the identical requests that joined it. */
interface SharedResult {
  readonly data: Record<string, unknown> | null | undefined;
  readonly errors: readonly GraphQLFormattedError[] | undefined;
  readonly status: number | undefined;
  /** The cache policy's decision for the leader's answer (cache/policy.ts), without keeping it whole (a joiner read nothing), and its extensions (the cache tags). */
  readonly decision: CacheDecision | undefined;
  readonly extensions: Record<string, unknown> | undefined;
}

/** What a joiner is told: the answer to take, LEAD (execute and publish for the others), or nothing (execute alone). */
const LEAD = Symbol('lead');
type Outcome = SharedResult | typeof LEAD | undefined;

/** A joiner waiting for its share's answer. */
interface Waiter {
  readonly signal: AbortSignal;
  readonly tell: (outcome: Outcome) => void;
}

/**
 * Identical requests in flight, one of them leading: the one executing, whose answer
 * the others take. The lead passes to a waiting joiner when the leader has nothing to
 * share (see `settle`), so a share lives until one of its requests has an answer for all.
 */
interface Share {
  readonly key: string;
  result: SharedResult | undefined;
  readonly waiters: Waiter[];
  /** Requests (leader and joiners) whose response is not out yet: the last one forgets the shared JSON. */
  sharers: number;
}

/** Per request: its share, whether it leads (and may publish its answer), and what it waits for while it does not. */
interface Slot {
  readonly share: Share;
  leads: boolean;
  readonly joined?: Promise<Outcome>;
}

/** Joiners released per turn of the event loop (see `settle`). */
export const JOINERS_PER_TURN = 8;

/**
 * Identical GraphQL requests in flight share their work: the first one (the leader)
 * executes; the ones that arrive while it is still being worked out (same tenant, same
 * body, same content type and accept header, no trace asked for) take its data and
 * errors instead of executing again, so a hot query costs its execution and its JSON
 * once per upstream answer, not once per client.
 *
 * Each joiner still goes through Apollo Server on its own: router gate, identity
 * (the tenant is resolved per request before anything is shared, and is part of the
 * key, so tenants never share), query limits, metrics and logs are per request; only
 * execution is skipped (the `responseForOperation` hook). Nothing outlives the leader:
 * a request that arrives once its answer is out starts afresh, as with the upstream
 * coalescer.
 *
 * A joiner does not inherit its leader's fate. A leader whose client left or whose
 * deadline passed publishes nothing, and neither does one whose answer depended on its
 * own moment rather than on the upstream (an error marked `momentary`: a full bulkhead,
 * a Retry-After window or token wait longer than what was left of its deadline, a
 * cancelled call). Then the lead passes to the first joiner still within its own
 * deadline: it executes, and the others wait for its answer instead (one execution at a
 * time, not one each). A joiner whose own signal aborts stops waiting at once.
 *
 * Joiners are released a few per event-loop turn: new requests are read between the
 * slices, so the next upstream call starts while the rest are still being answered
 * (released all at once, fifty answers left together, fifty clients came back
 * together and waited for the next call together while the core idled: a convoy).
 */
export class SharedRequests {
  private readonly leaders = new Map<string, Share>();
  /**
   * Keyed by the request's signal: Apollo hands plugins a shallow copy of the context,
   * with the same signal. Entries, here and in `json`, are deleted when their request's
   * response is out, not left to the keys' collection: V8 keeps a weak map's values
   * through young-generation collections, so each answer (its data and the page behind
   * it) would otherwise be promoted and die in the old generation, costing a full
   * collection every few requests.
   */
  private readonly slots = new WeakMap<AbortSignal, Slot>();
  /** Data objects shared by several answers: their JSON is written once. */
  private readonly json = new WeakMap<object, string | null>();

  constructor(
    private readonly observer: Pick<Observer, 'requestShared'> = NO_OBSERVER,
    private readonly joinersPerTurn = JOINERS_PER_TURN,
  ) {}

  /** Requests leading now (tests, diagnostics). */
  get size(): number {
    return this.leaders.size;
  }

  /**
   * Decides, for one POST request with its key (the cache policy's `requestKey`), whether it leads
   * or joins; returns what to call once its response is worked out.
   */
  begin(context: GraphQLContext, key: string): () => void {
    const signal = context.signal;
    const existing = this.leaders.get(key);
    if (existing) {
      existing.sharers += 1;
      const slot: Slot = { share: existing, leads: false, joined: this.wait(existing, signal, () => (slot.leads = true)) };
      this.slots.set(signal, slot);
      return () => this.finish(signal, slot);
    }
    const share: Share = { key, result: undefined, waiters: [], sharers: 1 };
    this.leaders.set(key, share);
    const slot: Slot = { share, leads: true };
    this.slots.set(signal, slot);
    return () => this.finish(signal, slot);
  }

  /** A request's response is worked out: if it led, its joiners get its answer (or the lead). */
  private finish(signal: AbortSignal, slot: Slot): void {
    if (slot.leads) this.settle(slot.share);
    this.done(signal, slot.share);
  }

  /**
   * One request of a share has its response out: its slot goes, and the last one takes
   * the shared answer along. The leader was made when its request began, so by now it
   * usually sits in V8's old generation, where its death goes unnoticed until a full
   * collection: an answer it still pointed to would be kept, and promoted, until then.
   */
  private done(signal: AbortSignal, share: Share): void {
    this.slots.delete(signal);
    share.sharers -= 1;
    if (share.sharers > 0) return;
    if (share.result?.data) this.json.delete(share.result.data);
    share.result = undefined;
  }

  /** The Apollo plugin that hands a joiner its leader's answer and lets a leader publish its own. */
  plugin(): ApolloServerPlugin<GraphQLContext> {
    const hooks: Awaited<ReturnType<NonNullable<ApolloServerPlugin<GraphQLContext>['requestDidStart']>>> = {
      responseForOperation: async ({ contextValue, operation }): Promise<GraphQLResponse | null> => {
        const slot = this.slots.get(contextValue.signal);
        if (!slot?.joined || slot.leads) return null;
        if (operation.operation !== 'query') {
          // Not a query (its leader publishes nothing either): it never takes the lead.
          this.withdraw(slot.share, contextValue.signal);
          return null;
        }
        const shared = await slot.joined;
        // The lead (execute, and publish for the others), or its own signal aborted: execute.
        if (shared === LEAD || !shared) return null;
        this.observer.requestShared();
        // The answer taken, its decision with it: the cache policy writes its headers.
        if (contextValue.cache) contextValue.cache.decision = shared.decision;
        return {
          http: { status: shared.status, headers: new HeaderMap() },
          body: { kind: 'single', singleResult: { data: shared.data, ...(shared.errors && { errors: shared.errors }), ...(shared.extensions && { extensions: { ...shared.extensions } }) } },
        };
      },
      willSendResponse: async ({ contextValue, response, operation, errors: raised }) => {
        const slot = this.slots.get(contextValue.signal);
        if (!slot?.leads || operation?.operation !== 'query' || response.body.kind !== 'single' || contextValue.signal.aborted) return;
        // An answer that depended on this request's own moment is not everyone's: the lead passes on.
        if (raised?.some(isMomentaryFailure)) return;
        // After the item errors were appended (that plugin comes first): joiners get them too.
        const { data, errors, extensions } = response.body.singleResult;
        const decision = contextValue.cache?.decision;
        slot.share.result = { data, errors, status: response.http.status, decision: decision && taken(decision), extensions };
        if (data && slot.share.waiters.length > 0) this.json.set(data, null);
      },
    };
    return {
      async requestDidStart() {
        return hooks;
      },
    };
  }

  /**
   * Apollo's `stringifyResult`: compact JSON, and the data of a shared answer written
   * once for all who share it.
   */
  readonly stringify = (value: { data?: unknown; errors?: unknown; extensions?: unknown }): string => {
    const data = value.data;
    if (typeof data !== 'object' || data === null || value.errors !== undefined || !this.json.has(data)) return JSON.stringify(value);
    let text = this.json.get(data);
    if (!text) {
      text = JSON.stringify(data);
      this.json.set(data, text);
    }
    // A cacheable answer's extensions (its cache tags) are small, and written per answer.
    return value.extensions === undefined ? `{"data":${text}}` : `{"data":${text},"extensions":${JSON.stringify(value.extensions)}}`;
  };

  /** Waits for the share's answer; `lead` runs (before the promise settles) when this joiner is given the lead. */
  private wait(share: Share, signal: AbortSignal, lead: () => void): Promise<Outcome> {
    return new Promise((resolve) => {
      const onAbort = () => {
        this.withdraw(share, signal);
        resolve(undefined);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      share.waiters.push({
        signal,
        tell: (outcome) => {
          signal.removeEventListener('abort', onAbort);
          if (outcome === LEAD) lead();
          resolve(outcome);
        },
      });
    });
  }

  /** A joiner stops waiting (its signal aborted, or it is no query): it can no longer take the lead. */
  private withdraw(share: Share, signal: AbortSignal): void {
    const index = share.waiters.findIndex((waiter) => waiter.signal === signal);
    if (index >= 0) share.waiters.splice(index, 1);
  }

  /**
   * The leader's response is worked out. With an answer to share, no one joins any
   * more and its joiners get it, a slice per turn. Without one, the first joiner still
   * within its deadline takes the lead (the share stays open to new identical requests).
   */
  private settle(share: Share): void {
    const { result, waiters } = share;
    if (!result) {
      let next: Waiter | undefined;
      while ((next = waiters.shift()) && next.signal.aborted);
      if (next) return next.tell(LEAD);
    }
    if (this.leaders.get(share.key) === share) this.leaders.delete(share.key);
    const release = (from: number) => {
      const to = Math.min(waiters.length, from + this.joinersPerTurn);
      for (let i = from; i < to; i++) waiters[i]!.tell(result);
      if (to < waiters.length) setImmediate(release, to);
    };
    if (waiters.length > 0) release(0);
  }
}
