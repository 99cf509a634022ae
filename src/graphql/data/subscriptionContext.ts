/**
 * The context of one graphql-ws subscription: the request context of queries
 * (context.ts), with the tenant found at subscribe, made afresh for each change it
 * resolves (`renew`), so a subscription holds no page cache, loader or deadline between
 * changes. `end` finishes it from outside (an identity that lapsed while it was open):
 * its events then stop with that error, which the resolver turns into the last `next`.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { createContext, type ContextServices, type GraphQLContext, type LiveContext } from './context';

const NO_HEADERS: IncomingHttpHeaders = Object.freeze({});

/** The abort reason of a subscription's work when it ends: one object, not a DOMException (and its stack) per subscription when a connection with many closes. */
const SUBSCRIPTION_OVER = new DOMException('the subscription is over', 'AbortError');

export class SubscriptionContext implements GraphQLContext {
  private current!: GraphQLContext;
  private controller!: AbortController;
  private timer: NodeJS.Timeout | undefined;
  private readonly services: ContextServices;
  /** Aborted by `end`, with its error: the hub ends the subscription's events with it. */
  private readonly ending = new AbortController();
  readonly live: LiveContext;

  constructor(
    services: ContextServices,
    tenantId: string,
    private readonly budgetMs: number,
    live: Omit<LiveContext, 'renew' | 'ended'>,
  ) {
    this.services = { ...services, identify: () => Promise.resolve(tenantId) };
    this.live = {
      ...live,
      renew: () => this.renew(),
      ended: this.ending.signal,
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
    this.ending.abort(error);
  }

  private fresh(): void {
    const controller = (this.controller = new AbortController());
    this.timer = setTimeout(() => controller.abort(new DOMException('the request budget is spent', 'TimeoutError')), this.budgetMs);
    this.timer.unref();
    // The tenant is known (`identify` answers it): no header of the connection is kept or read.
    this.current = createContext(this.services, NO_HEADERS, controller.signal);
  }
}
