import type { IncomingHttpHeaders } from 'node:http';
import { HeaderMap, type ApolloServerPlugin, type GraphQLResponse } from '@apollo/server';
import type { GraphQLFormattedError } from 'graphql';
import type { GraphQLContext } from '../graphql/data/context';
import { NO_OBSERVER, type Observer } from '../observability/events';

/** What a request that led shares with the identical requests that joined it. */
interface SharedResult {
  readonly data: Record<string, unknown> | null | undefined;
  readonly errors: readonly GraphQLFormattedError[] | undefined;
  readonly status: number | undefined;
}

/** A request in flight that identical requests may join, until its answer is worked out. */
interface Leader {
  result: SharedResult | undefined;
  readonly waiters: Array<(result: SharedResult | undefined) => void>;
  /** Requests (leader and joiners) whose response is not out yet: the last one forgets the shared JSON. */
  sharers: number;
}

/** Per request: whether it leads (and may publish its answer) or waits for a leader's. */
interface Slot {
  readonly leading?: Leader;
  readonly joined?: Promise<SharedResult | undefined>;
}

/** Joiners released per turn of the event loop (see `settle`). */
export const JOINERS_PER_TURN = 8;

/** The header a router sends to ask for an inline trace: such a request is worked out alone. */
const TRACE_HEADER = 'apollo-federation-include-trace';

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
 * coalescer. A leader whose client left or whose deadline passed publishes nothing;
 * its joiners then execute themselves, each within its own deadline, and a joiner
 * whose own signal aborts stops waiting at once.
 *
 * Joiners are released a few per event-loop turn: new requests are read between the
 * slices, so the next upstream call starts while the rest are still being answered
 * (released all at once, fifty answers left together, fifty clients came back
 * together and waited for the next call together while the core idled: a convoy).
 */
export class SharedRequests {
  private readonly leaders = new Map<string, Leader>();
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
   * Decides, for one POST request with its raw body, whether it leads or joins; returns
   * what to call once its response is worked out (undefined: not shareable).
   */
  async begin(context: GraphQLContext, body: string, headers: IncomingHttpHeaders): Promise<(() => void) | undefined> {
    if (headers[TRACE_HEADER] !== undefined) return undefined;
    // Identity first, per request: a request whose tenant is refused shares nothing (its error is its own).
    const tenantId = await context.tenant().then(
      (tenant) => tenant.tenantId,
      () => undefined,
    );
    if (tenantId === undefined || context.signal.aborted) return undefined;
    const key = `${tenantId}\u0000${headers['content-type'] ?? ''}\u0000${headers.accept ?? ''}\u0000${body}`;
    const signal = context.signal;
    const leader = this.leaders.get(key);
    if (leader) {
      leader.sharers += 1;
      this.slots.set(signal, { joined: this.wait(leader, signal) });
      return () => this.done(signal, leader);
    }
    const leading: Leader = { result: undefined, waiters: [], sharers: 1 };
    this.leaders.set(key, leading);
    this.slots.set(signal, { leading });
    return () => {
      this.settle(key, leading);
      this.done(signal, leading);
    };
  }

  /**
   * One request of a share has its response out: its slot goes, and the last one takes
   * the shared answer along. The leader was made when its request began, so by now it
   * usually sits in V8's old generation, where its death goes unnoticed until a full
   * collection: an answer it still pointed to would be kept, and promoted, until then.
   */
  private done(signal: AbortSignal, leader: Leader): void {
    this.slots.delete(signal);
    leader.sharers -= 1;
    if (leader.sharers > 0) return;
    if (leader.result?.data) this.json.delete(leader.result.data);
    leader.result = undefined;
  }

  /** The Apollo plugin that hands a joiner its leader's answer and lets a leader publish its own. */
  plugin(): ApolloServerPlugin<GraphQLContext> {
    const hooks: Awaited<ReturnType<NonNullable<ApolloServerPlugin<GraphQLContext>['requestDidStart']>>> = {
      responseForOperation: async ({ contextValue, operation }): Promise<GraphQLResponse | null> => {
        const joined = this.slots.get(contextValue.signal)?.joined;
        if (!joined || operation.operation !== 'query') return null;
        const shared = await joined;
        // No answer to share (the leader's client left, or its deadline passed): execute.
        if (!shared) return null;
        this.observer.requestShared();
        return {
          http: { status: shared.status, headers: new HeaderMap() },
          body: { kind: 'single', singleResult: { data: shared.data, ...(shared.errors && { errors: shared.errors }) } },
        };
      },
      willSendResponse: async ({ contextValue, response, operation }) => {
        const leading = this.slots.get(contextValue.signal)?.leading;
        if (!leading || operation?.operation !== 'query' || response.body.kind !== 'single' || contextValue.signal.aborted) return;
        // After the item errors were appended (that plugin comes first): joiners get them too.
        const { data, errors } = response.body.singleResult;
        leading.result = { data, errors, status: response.http.status };
        if (data && leading.waiters.length > 0) this.json.set(data, null);
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
    if (typeof data !== 'object' || data === null || value.errors !== undefined || value.extensions !== undefined || !this.json.has(data)) return JSON.stringify(value);
    let text = this.json.get(data);
    if (!text) {
      text = JSON.stringify(data);
      this.json.set(data, text);
    }
    return `{"data":${text}}`;
  };

  private wait(leader: Leader, signal: AbortSignal): Promise<SharedResult | undefined> {
    return new Promise((resolve) => {
      const onAbort = () => resolve(undefined);
      signal.addEventListener('abort', onAbort, { once: true });
      leader.waiters.push((result) => {
        signal.removeEventListener('abort', onAbort);
        resolve(result);
      });
    });
  }

  /** The leader's answer is out: no one joins any more; its joiners get it, a slice per turn. */
  private settle(key: string, leader: Leader): void {
    if (this.leaders.get(key) === leader) this.leaders.delete(key);
    const { result, waiters } = leader;
    const release = (from: number) => {
      const to = Math.min(waiters.length, from + this.joinersPerTurn);
      for (let i = from; i < to; i++) waiters[i]!(result);
      if (to < waiters.length) setImmediate(release, to);
    };
    if (waiters.length > 0) release(0);
  }
}
