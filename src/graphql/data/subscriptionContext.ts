/**
 * The context of one graphql-ws subscription: the request context of queries
 * (context.ts), with the tenant found at subscribe, made afresh for each change it
 * resolves (`renew`), so a subscription holds no page cache, loader or deadline between
 * changes. `end` finishes it from outside (an identity that lapsed while it was open):
 * its events then stop with that error, which the resolver turns into the last `next`.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { LiveEvent } from '../../live/hub';
import { createContext, type ContextServices, type GraphQLContext, type LiveContext } from './context';

/** The abort reason of a subscription's work when it ends: one object, not a DOMException (and its stack) per subscription when a connection with many closes. */
const SUBSCRIPTION_OVER = new DOMException('the subscription is over', 'AbortError');

export class SubscriptionContext implements GraphQLContext {
  private current!: GraphQLContext;
  private controller!: AbortController;
  private timer: NodeJS.Timeout | undefined;
  private readonly services: ContextServices;
  /** Why the subscription was ended from outside, once it was. */
  private ended: Error | undefined;
  /** Wakes the events' reader waiting for a change, when `end` comes first. */
  private wake: ((error: Error) => void) | undefined;
  readonly live: LiveContext;

  constructor(
    services: ContextServices,
    private readonly headers: IncomingHttpHeaders,
    tenantId: string,
    private readonly budgetMs: number,
    live: Omit<LiveContext, 'renew' | 'until'>,
  ) {
    this.services = { ...services, identify: () => Promise.resolve(tenantId) };
    this.live = {
      ...live,
      renew: () => this.renew(),
      until: (events) => this.until(events),
    };
    this.fresh();
  }

  tenant() {
    return this.current.tenant();
  }

  knownTenant() {
    return this.current.knownTenant();
  }

  get itemErrors() {
    return this.current.itemErrors;
  }

  get signal() {
    return this.current.signal;
  }

  release(): void {
    this.current.release();
  }

  renew(): void {
    this.close();
    this.fresh();
  }

  close(): void {
    clearTimeout(this.timer);
    this.controller.abort(SUBSCRIPTION_OVER);
    this.current.release();
  }

  /** Ends the subscription with `error` (its next event): an identity that lapsed. */
  end(error: Error): void {
    if (this.ended) return;
    this.ended = error;
    this.wake?.(error);
  }

  /** `events` until `end`: then one `{ error }` event, and the hub's subscription is returned. */
  private until(events: AsyncIterableIterator<LiveEvent>): AsyncIterableIterator<LiveEvent> {
    let over = false;
    const finish = (error: Error): IteratorResult<LiveEvent> => {
      over = true;
      this.wake = undefined;
      void events.return?.();
      return { value: { error }, done: false };
    };
    const iterator: AsyncIterableIterator<LiveEvent> = {
      next: () => {
        if (over) return Promise.resolve({ value: undefined, done: true });
        if (this.ended) return Promise.resolve(finish(this.ended));
        return new Promise((resolve, reject) => {
          this.wake = (error) => resolve(finish(error));
          events.next().then((result) => {
            this.wake = undefined;
            resolve(result);
          }, reject);
        });
      },
      return: () => {
        over = true;
        this.wake = undefined;
        return events.return?.() ?? Promise.resolve({ value: undefined, done: true });
      },
      [Symbol.asyncIterator]: () => iterator,
    };
    return iterator;
  }

  private fresh(): void {
    const controller = (this.controller = new AbortController());
    this.timer = setTimeout(() => controller.abort(new DOMException('the request budget is spent', 'TimeoutError')), this.budgetMs);
    this.timer.unref();
    this.current = createContext(this.services, this.headers, controller.signal);
  }
}
