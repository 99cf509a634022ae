/**
 * The live hub of one replica: one poller per company and list, whatever the
 * subscribers' filters, started with the first subscriber and stopped with the last;
 * each subscriber's filter applied to the changes of the one walk (subscribers with the
 * same filter share the work); bounded subscriptions per company and per replica; each
 * subscriber's queue bounded (a consumer that does not keep up is dropped, not
 * buffered without end).
 */
import { filterKey } from '../upstream/pageKey';
import type { AnyResource, ListFilter, UpstreamRecord } from '../upstream/resources';
import type { LiveEvents } from './metrics';
import { Poller, type PollerServices } from './poller';
import { inScope, type ChangeKind, type RecordChange } from './snapshot';

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

/** The error that ends subscriptions when the replica shuts down. */
export class LiveClosedError extends Error {
  override readonly name = 'LiveClosedError';
}

interface Subscriber {
  readonly push: (event: LiveEvent) => void;
}

/** The subscribers of one key with one filter: its changes are worked out once for all of them. */
interface View {
  readonly matches: ((record: UpstreamRecord) => boolean) | undefined;
  readonly subscribers: Set<Subscriber>;
}

/** A company's list with subscribers on this replica: its poller, and its subscribers by filter. */
interface Entry {
  readonly poller: Poller;
  readonly views: Map<string, View>;
  subscribers: number;
}

export class LiveHub {
  private readonly entries = new Map<string, Entry>();
  private readonly perCompany = new Map<string, number>();
  private open = 0;
  readonly limits: LiveLimits;

  /** `services`: what every poller shares (interval, reader, budget, coordinator, events, memory). */
  constructor(
    private readonly services: PollerServices,
    limits: Partial<LiveLimits> = {},
  ) {
    this.limits = { ...DEFAULT_LIVE_LIMITS, ...limits };
  }

  private get events(): LiveEvents {
    return this.services.events;
  }

  /** Open subscriptions on this replica. */
  get subscriptions(): number {
    return this.open;
  }

  /** Pollers on this replica: one per company and list with subscribers here, at most the lists per company. */
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
      this.events.liveRefused('replica');
      throw new LiveLimitError('SERVICE_UNAVAILABLE', 'replica', `this replica serves ${this.limits.perReplica} subscriptions already; retry in a moment (another replica may take it)`);
    }
    if (company >= this.limits.perCompany) {
      this.events.liveRefused('company');
      throw new LiveLimitError('SERVICE_UNAVAILABLE', 'company', `your company has ${this.limits.perCompany} open subscriptions on this replica already; share one subscription between screens, or close some`);
    }
    const key = `${tenantId}\n${resource.name}`;
    const entry = this.entries.get(key) ?? this.startPoller(key, tenantId, resource);
    const scope = filter && resource.matches && filterKey(filter) !== '' ? filterKey(filter) : '';
    let view = entry.views.get(scope);
    if (!view) {
      const matches = scope === '' ? undefined : (record: UpstreamRecord) => resource.matches!(record, filter!);
      entry.views.set(scope, (view = { matches, subscribers: new Set() }));
    }
    const list = resource.name;
    const subscriber = boundedQueue(this.limits.queuedChanges, this.events, () => {
      view.subscribers.delete(subscriber.subscriber);
      if (view.subscribers.size === 0 && entry.views.get(scope) === view) entry.views.delete(scope);
      entry.subscribers -= 1;
      this.open -= 1;
      const left = (this.perCompany.get(tenantId) ?? 1) - 1;
      if (left === 0) this.perCompany.delete(tenantId);
      else this.perCompany.set(tenantId, left);
      this.events.liveSubscriptions(list, -1);
      if (entry.subscribers === 0) this.stopPoller(key, entry);
    });
    view.subscribers.add(subscriber.subscriber);
    entry.subscribers += 1;
    this.open += 1;
    this.perCompany.set(tenantId, company + 1);
    this.events.liveSubscriptions(list, 1);
    return subscriber.iterator;
  }

  /** Stops every poller and ends every subscription (shutdown). */
  async close(): Promise<void> {
    for (const [key, entry] of this.entries) {
      this.broadcast(entry, { error: new LiveClosedError('the server is shutting down; resubscribe to another replica') });
      this.stopPoller(key, entry);
    }
    await this.services.coordinator.close();
  }

  private startPoller(key: string, tenantId: string, resource: AnyResource): Entry {
    let entry: Entry;
    const poller = new Poller(key, tenantId, resource, this.services, {
      changes: (changes, before) => {
        for (const view of [...entry.views.values()]) {
          for (const change of changes) {
            // A view whose subscribers all ended (slow consumers past their bound) stops here.
            if (view.subscribers.size === 0) break;
            const seen = view.matches ? inScope(change, before.get(change.id), view.matches) : change;
            if (!seen) continue;
            const event = eventOf(seen);
            for (const subscriber of [...view.subscribers]) subscriber.push(event);
          }
        }
      },
      failed: (error) => {
        this.broadcast(entry, { error });
        this.stopPoller(key, entry);
      },
    });
    entry = { poller, views: new Map(), subscribers: 0 };
    this.entries.set(key, entry);
    poller.start();
    return entry;
  }

  private broadcast(entry: Entry, event: LiveEvent): void {
    for (const view of [...entry.views.values()]) for (const subscriber of [...view.subscribers]) subscriber.push(event);
  }

  private stopPoller(key: string, entry: Entry): void {
    if (this.entries.get(key) !== entry) return;
    this.entries.delete(key);
    entry.poller.stop();
    if (this.entries.size === 0) this.events.livePollStretch(1, false);
  }
}

function eventOf(change: RecordChange): LiveEvent {
  return { kind: change.kind, id: change.id, ...(change.record && { record: change.record }) };
}

/**
 * One subscriber's queue and the async iterator its GraphQL subscription reads. Kept
 * by hand (about 50 lines), not taken from a library, because none keeps the
 * slow-consumer drop: graphql-ws and @graphql-tools have no bounded queue, and
 * @repeaterjs/repeater (graphql-yoga's, 3.1) comes closest but past its FixedBuffer
 * piles pushes up as pending (1 024, then throws), its Sliding and Dropping buffers lose
 * changes silently (a client's store then diverges without knowing), and its
 * `stop(error)` delivers the error only once the buffer is drained, so a client that
 * stopped reading holds its 1 000 stale changes. Here a slow consumer is ended at once:
 * its queue is let go, its slots (and maybe its poller) freed, and it reads
 * SlowConsumerError next. `onFinish` runs once, when it ends for any reason.
 */
function boundedQueue(bound: number, events: LiveEvents, onFinish: () => void): { subscriber: Subscriber; iterator: AsyncIterableIterator<LiveEvent> } {
  const queue: LiveEvent[] = [];
  let waiting: ((result: IteratorResult<LiveEvent>) => void) | undefined;
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    onFinish();
  };
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
      if (queue.length >= bound && !('error' in event)) {
        // Dropped at once: no more is queued for it, and its poller may stop; the
        // client reads the error when (if ever) it reads again.
        events.liveSlowConsumerDropped();
        queue.length = 0;
        queue.push({ error: new SlowConsumerError(`more than ${bound} changes waited for this subscription: it was ended; resubscribe and query again`) });
        finish();
        return;
      }
      queue.push(event);
      if ('error' in event) finish();
    },
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
  return { subscriber, iterator };
}
