/**
 * The live hub of one replica: one poller per company and list, whatever the
 * subscribers' filters, started with the first subscriber or when the list is watched
 * for queries (watch.ts, docs/caching.md), and stopped when it has neither;
 * subscribers with the same filter grouped in one view, and a change matched to the
 * views it concerns by lookup (viewIndex.ts), never tried on every filter; the
 * deliveries cut into slices that give the event loop back (delivery.ts); bounded
 * subscriptions and distinct filters per company, subscriptions per replica; each
 * subscriber's queue bounded (a consumer that does not keep up is dropped, not
 * buffered without end).
 */
import { DEFAULT_LIMITS, type LiveLimits } from '../config';
import { filterKey } from '../upstream/pageKey';
import type { AnyResource, ListFilter } from '../upstream/resources';
import { Outbox, Slices, type LiveEvent, type Subscriber, type View } from './delivery';
import type { LiveEvents } from './metrics';
import type { PollerReason } from '../upstream/observer';
import { Poller, type PollerServices } from './poller';
import { ViewIndex, type WorkMeter } from './viewIndex';

export type { LiveEvent } from './delivery';

/** The hub's bounds: `limits.live` of the configuration (config/limits.ts says each one's default and reason). */
export type { LiveLimits };

/** The hub's refusal reasons (graphql/admission/refusals.ts has every reason's code and label). */
export type LiveLimitReason = 'company_subscriptions' | 'replica_subscriptions' | 'filters';

/** A subscription refused by a limit; `code` is the `extensions.code` it answers with. */
export class LiveLimitError extends Error {
  override readonly name = 'LiveLimitError';
  constructor(
    readonly code: 'SERVICE_UNAVAILABLE',
    readonly reason: LiveLimitReason,
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

/** A company's list polled on this replica: its poller, its subscribers by filter, their index, what waits to be delivered, and why it is polled. */
interface Entry {
  readonly poller: Poller;
  readonly views: Map<string, View>;
  readonly index: ViewIndex<View>;
  readonly outbox: Outbox;
  subscribers: number;
  /** Watched for queries (watch.ts). */
  watched: boolean;
  /** The reason `wfs_live_pollers` counts it under now; undefined once stopped. */
  reason: PollerReason | undefined;
}

/** What a poller of the hub tells the watching choice once per interval (watch.ts). */
export type PollTicks = (tenantId: string, list: string, calls: number | undefined) => void;

export class LiveHub {
  private readonly entries = new Map<string, Entry>();
  private readonly perCompany = new Map<string, number>();
  /** Views with a filter, per company (all its lists). */
  private readonly filtersOf = new Map<string, number>();
  /** The index work of all this replica's lists, which the slices are cut by. */
  private readonly meter: WorkMeter = { units: 0 };
  private readonly slices: Slices;
  private open = 0;
  private watchedCount = 0;
  /** Told once per interval of each poller's turn (watch.ts). */
  private ticks: PollTicks | undefined;
  readonly limits: LiveLimits;

  /** `services`: what every poller shares (interval, reader, budget, coordinator, events, memory). */
  constructor(
    private readonly services: PollerServices,
    limits: Partial<LiveLimits> = {},
  ) {
    this.limits = { ...DEFAULT_LIMITS.live, ...limits };
    this.slices = new Slices(this.meter);
  }

  private get events(): LiveEvents {
    return this.services.events;
  }

  /** Open subscriptions on this replica. */
  get subscriptions(): number {
    return this.open;
  }

  /** Pollers on this replica: one per company and list with subscribers or watched here, at most the lists per company. */
  get pollers(): number {
    return this.entries.size;
  }

  /** Lists watched for queries on this replica. */
  get watched(): number {
    return this.watchedCount;
  }

  /** Why `tenantId`'s `list` is polled here, or undefined when it is not. */
  reasonFor(tenantId: string, list: string): PollerReason | undefined {
    return this.entries.get(`${tenantId}\n${list}`)?.reason;
  }

  /** Where each poller's turn is told, once per interval (the watching choice, watch.ts). */
  onTicks(ticks: PollTicks): void {
    this.ticks = ticks;
  }

  /**
   * Polls `tenantId`'s `resource` list for queries (watch.ts), with the poller its
   * subscribers have if there is one: one walk per interval whatever the reasons.
   * False when the replica's bound on watched lists (`limits.live.watchedLists`) is reached.
   */
  watch(tenantId: string, resource: AnyResource): boolean {
    const key = `${tenantId}\n${resource.name}`;
    const existing = this.entries.get(key);
    if (existing?.watched) return true;
    if (this.watchedCount >= this.limits.watchedLists) return false;
    const entry = existing ?? this.startPoller(key, tenantId, resource);
    entry.watched = true;
    this.watchedCount += 1;
    this.account(entry);
    return true;
  }

  /** No longer polls `tenantId`'s `list` for queries; its poller stops unless it has subscribers. */
  unwatch(tenantId: string, list: string): void {
    const key = `${tenantId}\n${list}`;
    const entry = this.entries.get(key);
    if (!entry?.watched) return;
    entry.watched = false;
    this.watchedCount -= 1;
    if (entry.subscribers === 0) {
      entry.outbox.stop();
      this.stopPoller(key, entry);
    } else this.account(entry);
  }

  /** Distinct filters of `tenantId`'s open subscriptions on this replica. */
  filters(tenantId: string): number {
    return this.filtersOf.get(tenantId) ?? 0;
  }

  /**
   * The changes of `tenantId`'s `resource` list (within `filter`) from now on, until
   * the iterator is returned, the poller fails, or `ended` aborts: the next event is then
   * `{ error: ended.reason }` (changes still queued are let go) and the subscription's
   * slots are free at once. Throws LiveLimitError when a limit is reached.
   */
  subscribe(tenantId: string, resource: AnyResource, filter?: ListFilter, ended?: AbortSignal, transport?: string): AsyncIterableIterator<LiveEvent> {
    const company = this.perCompany.get(tenantId) ?? 0;
    if (this.open >= this.limits.perReplica) {
      this.events.refused('replica_subscriptions', transport);
      throw new LiveLimitError('SERVICE_UNAVAILABLE', 'replica_subscriptions', `this replica serves ${this.limits.perReplica} subscriptions already; retry in a moment (another replica may take it)`);
    }
    if (company >= this.limits.perCompany) {
      this.events.refused('company_subscriptions', transport);
      throw new LiveLimitError('SERVICE_UNAVAILABLE', 'company_subscriptions', `your company has ${this.limits.perCompany} open subscriptions on this replica already; share one subscription between screens, or close some`);
    }
    const key = `${tenantId}\n${resource.name}`;
    const scope = filter && resource.matches && filterKey(filter) !== '' ? filterKey(filter) : '';
    const existing = this.entries.get(key);
    if (scope !== '' && !existing?.views.has(scope) && this.filters(tenantId) >= this.limits.filtersPerCompany) {
      this.events.refused('filters', transport);
      throw new LiveLimitError(
        'SERVICE_UNAVAILABLE',
        'filters',
        `your company's open subscriptions have ${this.limits.filtersPerCompany} distinct filters on this replica already; subscribe with a filter already in use (whole days in startsFrom and startsBefore, say), or close some`,
      );
    }
    const entry = existing ?? this.startPoller(key, tenantId, resource);
    let view = entry.views.get(scope);
    if (!view) {
      view = { filter: scope === '' ? undefined : filter, subscribers: new Set() };
      entry.views.set(scope, view);
      entry.index.add(view);
      if (scope !== '') this.filtersOf.set(tenantId, this.filters(tenantId) + 1);
    }
    const joined = view;
    const list = resource.name;
    const end = () => subscriber.end(ended?.reason instanceof Error ? ended.reason : new LiveClosedError('the subscription was ended; resubscribe'));
    const subscriber = boundedQueue(this.limits.queuedChanges, entry.outbox.last, this.events, () => {
      ended?.removeEventListener('abort', end);
      joined.subscribers.delete(subscriber.subscriber);
      if (joined.subscribers.size === 0 && entry.views.get(scope) === joined) {
        entry.views.delete(scope);
        entry.index.delete(joined);
        if (scope !== '') {
          const left = this.filters(tenantId) - 1;
          if (left === 0) this.filtersOf.delete(tenantId);
          else this.filtersOf.set(tenantId, left);
        }
      }
      entry.subscribers -= 1;
      this.open -= 1;
      const left = (this.perCompany.get(tenantId) ?? 1) - 1;
      if (left === 0) this.perCompany.delete(tenantId);
      else this.perCompany.set(tenantId, left);
      this.events.liveSubscriptions(list, -1);
      if (entry.subscribers === 0 && !entry.watched) {
        entry.outbox.stop();
        this.stopPoller(key, entry);
      } else this.account(entry);
    });
    joined.subscribers.add(subscriber.subscriber);
    entry.subscribers += 1;
    this.account(entry);
    this.open += 1;
    this.perCompany.set(tenantId, company + 1);
    this.events.liveSubscriptions(list, 1);
    // Only now that it is counted: ending it uncounts it.
    if (ended?.aborted) end();
    else ended?.addEventListener('abort', end, { once: true });
    return subscriber.iterator;
  }

  /** Stops every poller and ends every subscription (shutdown). */
  async close(): Promise<void> {
    for (const [key, entry] of this.entries) {
      entry.outbox.stop();
      const event: LiveEvent = { error: new LiveClosedError('the server is shutting down; resubscribe to another replica') };
      for (const view of [...entry.views.values()]) for (const subscriber of [...view.subscribers]) subscriber.push(event);
      this.stopPoller(key, entry);
    }
    await this.services.coordinator.close();
  }

  private startPoller(key: string, tenantId: string, resource: AnyResource): Entry {
    const views = new Map<string, View>();
    const index = new ViewIndex<View>(resource, this.meter);
    const outbox = new Outbox(index, () => [...views.values()], this.slices);
    const poller = new Poller(key, tenantId, resource, this.services, {
      // Taken in at once, delivered in slices (delivery.ts).
      changes: (changes, before) => outbox.add(changes, before),
      failed: (error) => {
        // Its subscribers end after the changes before the failure; new ones start a new
        // poller (and the watching choice starts one again only if reads go on).
        outbox.end(error);
        this.stopPoller(key, entry);
      },
      ticked: (calls) => this.ticks?.(tenantId, resource.name, calls),
    });
    const entry: Entry = { poller, views, index, outbox, subscribers: 0, watched: false, reason: undefined };
    this.entries.set(key, entry);
    poller.start();
    return entry;
  }

  private stopPoller(key: string, entry: Entry): void {
    if (this.entries.get(key) !== entry) return;
    this.entries.delete(key);
    if (entry.watched) this.watchedCount -= 1;
    entry.watched = false;
    this.account(entry);
    entry.poller.stop();
    if (this.entries.size === 0) this.events.livePollStretch(1, false);
  }

  /** Moves `entry` to the reason it is polled for now on `wfs_live_pollers` (none once stopped). */
  private account(entry: Entry): void {
    const stopped = this.entries.get(entry.poller.key) !== entry;
    const reason: PollerReason | undefined = stopped ? undefined : entry.subscribers > 0 ? (entry.watched ? 'both' : 'subscribers') : entry.watched ? 'watched' : undefined;
    if (reason === entry.reason) return;
    if (entry.reason) this.events.livePollers(entry.reason, -1);
    if (reason) this.events.livePollers(reason, 1);
    entry.reason = reason;
  }
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
 * SlowConsumerError next; one ended from outside (`end`) likewise reads its error next.
 * `onFinish` runs once, when it ends for any reason.
 */
function boundedQueue(
  bound: number,
  after: number,
  events: LiveEvents,
  onFinish: () => void,
): { subscriber: Subscriber; iterator: AsyncIterableIterator<LiveEvent>; end: (error: Error) => void } {
  const queue: LiveEvent[] = [];
  let waiting: ((result: IteratorResult<LiveEvent>) => void) | undefined;
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    onFinish();
  };
  const subscriber: Subscriber = {
    after,
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
  const end = (error: Error) => {
    if (done) return;
    queue.length = 0;
    subscriber.push({ error });
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
  return { subscriber, iterator, end };
}
