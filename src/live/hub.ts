/**
 * The live hub of one replica: pollers by key (tenant, list, filter), each shared by
 * every subscriber of its key, started with the first and stopped with the last;
 * bounded subscriptions per company and per replica; each subscriber's queue bounded
 * (a consumer that does not keep up is dropped, not buffered without end).
 */
import { filterKey } from '../upstream/pageKey';
import type { AnyResource, ListFilter, UpstreamRecord } from '../upstream/resources';
import { LOCAL_COORDINATOR, type Coordinator } from './coordinator';
import type { ListReader } from './listReader';
import type { LiveMetrics } from './metrics';
import { Poller } from './poller';
import { PollBudget } from './pollBudget';
import type { ChangeKind, RecordChange } from './snapshot';

/** What a subscriber receives: a change, or the error that ends its subscription. */
export type LiveEvent = { readonly kind: ChangeKind; readonly id: string; readonly record?: UpstreamRecord } | { readonly error: Error };

export interface LiveLimits {
  /** Open subscriptions one company may hold on a replica. */
  readonly perCompany: number;
  /** Open subscriptions on a replica. */
  readonly perReplica: number;
  /** Changes waiting for one subscriber before it is dropped as a slow consumer. */
  readonly queuedChanges: number;
}

export const DEFAULT_LIVE_LIMITS: LiveLimits = Object.freeze({ perCompany: 5_000, perReplica: 20_000, queuedChanges: 1_000 });

/** A subscription refused by a limit; `code` is the `extensions.code` it answers with. */
export class LiveLimitError extends Error {
  override readonly name = 'LiveLimitError';
  constructor(
    readonly code: 'SERVICE_UNAVAILABLE',
    readonly reason: 'company' | 'replica',
    message: string,
  ) {
    super(message);
  }
}

/** The error that ends a subscription whose client did not read its changes. */
export class SlowConsumerError extends Error {
  override readonly name = 'SlowConsumerError';
}

export interface LiveHubOptions {
  readonly read: ListReader;
  /** WFS_POLL_INTERVAL_SECONDS in ms. */
  readonly intervalMs: number;
  /** WFS_POLL_CALLS_PER_SECOND. */
  readonly callsPerSecond: number;
  readonly coordinator?: Coordinator;
  readonly metrics?: LiveMetrics;
  readonly limits?: Partial<LiveLimits>;
  /** Charges (or gives back) entries of the pollers' snapshots against the memory budget of the entity indexes. */
  readonly charge?: (entries: number) => void;
  readonly random?: () => number;
}

interface Subscriber {
  readonly push: (event: LiveEvent) => void;
}

interface Entry {
  readonly poller: Poller;
  readonly tenantId: string;
  readonly list: string;
  readonly subscribers: Set<Subscriber>;
  leading: boolean;
}

export class LiveHub {
  private readonly entries = new Map<string, Entry>();
  private readonly perCompany = new Map<string, number>();
  private open = 0;
  private readonly budget: PollBudget;
  private readonly coordinator: Coordinator;
  readonly limits: LiveLimits;

  constructor(private readonly options: LiveHubOptions) {
    this.budget = new PollBudget(options.callsPerSecond);
    this.coordinator = options.coordinator ?? LOCAL_COORDINATOR;
    this.limits = { ...DEFAULT_LIVE_LIMITS, ...options.limits };
  }

  /** Open subscriptions on this replica. */
  get subscriptions(): number {
    return this.open;
  }

  /** Pollers on this replica. */
  get pollers(): number {
    return this.entries.size;
  }

  /**
   * The changes of `tenantId`'s `resource` list (within `filter`) from now on, until
   * the iterator is returned or the poller fails. Throws LiveLimitError when a limit
   * is reached.
   */
  subscribe(tenantId: string, resource: AnyResource, filter?: ListFilter): AsyncIterableIterator<LiveEvent> {
    const company = this.perCompany.get(tenantId) ?? 0;
    if (this.open >= this.limits.perReplica) {
      this.options.metrics?.refused.inc({ reason: 'replica' });
      throw new LiveLimitError('SERVICE_UNAVAILABLE', 'replica', `this replica serves ${this.limits.perReplica} subscriptions already; retry in a moment (another replica may take it)`);
    }
    if (company >= this.limits.perCompany) {
      this.options.metrics?.refused.inc({ reason: 'company' });
      throw new LiveLimitError('SERVICE_UNAVAILABLE', 'company', `your company has ${this.limits.perCompany} open subscriptions on this replica already; share one subscription between screens, or close some`);
    }
    const key = `${tenantId}\n${resource.name}\n${filterKey(filter)}`;
    const entry = this.entries.get(key) ?? this.startPoller(key, tenantId, resource, filter);
    const queue: LiveEvent[] = [];
    let waiting: ((result: IteratorResult<LiveEvent>) => void) | undefined;
    let done = false;
    const subscriber: Subscriber = {
      push: (event) => {
        if (done) return;
        if (waiting) {
          const resolve = waiting;
          waiting = undefined;
          resolve({ value: event, done: false });
          if ('error' in event) finish();
          return;
        }
        if (queue.length >= this.limits.queuedChanges && !('error' in event)) {
          // Dropped at once: no more is queued for it, and its poller may stop; the
          // client reads the error when (if ever) it reads again.
          this.options.metrics?.slowConsumersDropped.inc();
          queue.length = 0;
          queue.push({ error: new SlowConsumerError(`more than ${this.limits.queuedChanges} changes waited for this subscription: it was ended; resubscribe and query again`) });
          finish();
          return;
        }
        queue.push(event);
        if ('error' in event) finish();
      },
    };
    entry.subscribers.add(subscriber);
    this.open += 1;
    this.perCompany.set(tenantId, company + 1);
    this.options.metrics?.subscriptions.inc({ list: resource.name });

    const finish = () => {
      if (done) return;
      done = true;
      entry.subscribers.delete(subscriber);
      this.open -= 1;
      const left = (this.perCompany.get(tenantId) ?? 1) - 1;
      if (left === 0) this.perCompany.delete(tenantId);
      else this.perCompany.set(tenantId, left);
      this.options.metrics?.subscriptions.dec({ list: resource.name });
      if (entry.subscribers.size === 0) this.stopPoller(key, entry);
    };
    const iterator: AsyncIterableIterator<LiveEvent> = {
      next: () => {
        const event = queue.shift();
        if (event) return Promise.resolve({ value: event, done: false });
        if (done) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => (waiting = resolve));
      },
      return: () => {
        finish();
        queue.length = 0;
        const resolve = waiting;
        waiting = undefined;
        resolve?.({ value: undefined, done: true });
        return Promise.resolve({ value: undefined, done: true });
      },
      [Symbol.asyncIterator]() {
        return iterator;
      },
    };
    return iterator;
  }

  /** Stops every poller and ends every subscription (shutdown). */
  async close(): Promise<void> {
    for (const [key, entry] of this.entries) {
      for (const subscriber of entry.subscribers) subscriber.push({ error: new LiveClosedError('the server is shutting down; resubscribe to another replica') });
      this.stopPoller(key, entry);
    }
    await this.coordinator.close();
  }

  private startPoller(key: string, tenantId: string, resource: AnyResource, filter: ListFilter | undefined): Entry {
    const { metrics } = this.options;
    const list = resource.name;
    const subscribers = new Set<Subscriber>();
    const broadcast = (event: LiveEvent) => {
      for (const subscriber of subscribers) subscriber.push(event);
    };
    const deliver = (changes: readonly RecordChange[]) => {
      for (const change of changes) {
        metrics?.changes.inc({ list, kind: change.kind });
        broadcast({ kind: change.kind, id: change.id, ...(change.record && { record: change.record }) });
      }
    };
    let entry: Entry;
    const poller = new Poller({
      key,
      tenantId,
      resource,
      filter,
      intervalMs: this.options.intervalMs,
      read: this.options.read,
      budget: this.budget,
      ...(this.options.random && { random: this.options.random }),
      hooks: {
        deliver,
        fail: (error) => {
          broadcast({ error });
          this.stopPoller(key, entry);
        },
        lead: async (holdMs) => {
          const leading = await this.coordinator.lead(key, holdMs);
          if (leading !== entry.leading) metrics?.pollersLeading.inc(leading ? 1 : -1);
          entry.leading = leading;
          return leading;
        },
        publish: (changes) => this.coordinator.publish(key, changes),
        polled: (outcome, seconds) => {
          metrics?.polls.inc({ list, outcome });
          metrics?.pollDuration.observe({ list }, seconds);
        },
        stretched: (factor) => {
          metrics?.intervalsStretched.inc();
          metrics?.stretchFactor.set(factor);
        },
        resized: (entries) => this.options.charge?.(entries),
      },
    });
    entry = { poller, tenantId, list, subscribers, leading: false };
    this.entries.set(key, entry);
    metrics?.pollers.inc();
    this.coordinator.listen(key, (changes) => poller.received(changes));
    poller.start();
    return entry;
  }

  private stopPoller(key: string, entry: Entry): void {
    if (this.entries.get(key) !== entry) return;
    this.entries.delete(key);
    entry.poller.stop();
    this.coordinator.forget(key);
    this.options.metrics?.pollers.dec();
    if (entry.leading) this.options.metrics?.pollersLeading.dec();
    if (this.entries.size === 0) this.options.metrics?.stretchFactor.set(1);
  }
}

/** The error that ends subscriptions when the replica shuts down. */
export class LiveClosedError extends Error {
  override readonly name = 'LiveClosedError';
}
