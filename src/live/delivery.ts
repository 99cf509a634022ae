/**
 * Delivering a poll's changes in slices that give the event loop back. A poll of a long
 * list can find thousands of changes, and each change delivered sets off its
 * subscriber's GraphQL execution and socket write in the microtasks right after; done
 * in one go for a company with thousands of subscribers, that held every other
 * company's queries for seconds. So the hub's work is cut into
 * slices of bounded work (`SLICE`: index units, and deliveries), one turn of the loop
 * each (`setImmediate`), and the lists with work waiting take turns within the replica,
 * so no company's poll holds another's for long.
 *
 * Order and completeness: each list (company and list: one poller) has one `Outbox`
 * that works through its batches (one per poll, or per message from another replica)
 * in the order they came, change by change, with a cursor that survives between
 * slices; a change is delivered once to each subscriber it concerns, in the order of
 * the list. A subscriber gets the batches found after it subscribed (`after`), as when
 * the changes were handed out at once. An end (the poller failed) comes after the
 * batches before it.
 */
import type { ChangeKind, RecordChange } from './snapshot';
import type { UpstreamRecord } from '../upstream/resources';
import type { IndexedView, ViewIndex, WorkMeter } from './viewIndex';

/** What a subscriber receives: a change, or the error that ends its subscription. */
export type LiveEvent = { readonly kind: ChangeKind; readonly id: string; readonly record?: UpstreamRecord } | { readonly error: Error };

export interface Subscriber {
  /** The batches it receives are those numbered above this (found after it subscribed). */
  readonly after: number;
  readonly push: (event: LiveEvent) => void;
}

/** The subscribers of one list with one filter: a change is matched once for all of them. */
export interface View extends IndexedView {
  readonly subscribers: Set<Subscriber>;
}

/**
 * The work of one slice: about a millisecond of index work (a unit is a bucket probed,
 * a tree node visited, a view reported: tens of nanoseconds), or 200 deliveries (each
 * runs its subscription's GraphQL execution and writes a message, some tens of µs).
 * A single step may overrun a slice (a change for one view of 5 000 subscribers is
 * delivered 200 at a time, but its lookup is one step), never by more than one.
 */
export const SLICE = Object.freeze({ units: 20_000, deliveries: 200 });

export interface SliceLimits {
  readonly units: number;
  readonly deliveries: number;
}

/** One slice's allowance. */
interface Budget {
  readonly units: number;
  deliveries: number;
}

interface Batch {
  readonly number: number;
  readonly changes: readonly RecordChange[];
  readonly before: ReadonlyMap<string, UpstreamRecord>;
  /** The next change to match. */
  next: number;
}

interface Ending {
  readonly error: Error;
}

/** One list's changes waiting to be delivered, in order. */
export class Outbox {
  private readonly waiting: Array<Batch | Ending> = [];
  /** The deliveries of the change (or end) under way, and how far they got. */
  private current: Array<readonly [Subscriber, LiveEvent]> = [];
  private at = 0;
  private numbered = 0;
  private stopped = false;

  constructor(
    private readonly index: ViewIndex<View>,
    private readonly views: () => Iterable<View>,
    private readonly slices: Slices,
  ) {}

  /** The number of the last batch taken in: a subscriber joining now gets the later ones. */
  get last(): number {
    return this.numbered;
  }

  /** Whether anything waits to be delivered. */
  get pending(): boolean {
    return this.at < this.current.length || this.waiting.length > 0;
  }

  add(changes: readonly RecordChange[], before: ReadonlyMap<string, UpstreamRecord>): void {
    if (this.stopped || changes.length === 0) return;
    this.waiting.push({ number: ++this.numbered, changes, before, next: 0 });
    this.slices.want(this);
  }

  /** Ends every subscriber of the list with `error`, after what waits before it. */
  end(error: Error): void {
    if (this.stopped) return;
    this.waiting.push({ error });
    this.slices.want(this);
  }

  /** Drops what waits (the list's subscribers are gone, or were ended otherwise). */
  stop(): void {
    this.stopped = true;
    this.waiting.length = 0;
    this.current = [];
    this.at = 0;
  }

  /** Works until the budget is spent or nothing waits; whether work remains. */
  run(budget: Budget, meter: WorkMeter): boolean {
    while (!this.stopped && meter.units < budget.units && budget.deliveries > 0) {
      if (this.at < this.current.length) {
        const [subscriber, event] = this.current[this.at++]!;
        budget.deliveries -= 1;
        subscriber.push(event);
        continue;
      }
      this.current = [];
      this.at = 0;
      const head = this.waiting[0];
      if (!head) return false;
      if ('error' in head) {
        this.waiting.shift();
        const event: LiveEvent = { error: head.error };
        for (const view of this.views()) for (const subscriber of view.subscribers) this.current.push([subscriber, event]);
        meter.units += this.current.length;
        continue;
      }
      if (head.next >= head.changes.length) {
        this.waiting.shift();
        continue;
      }
      const change = head.changes[head.next++]!;
      const deliveries = this.current;
      this.index.match(change, head.before.get(change.id), (view, seen) => {
        const event = eventOf(seen);
        for (const subscriber of view.subscribers) {
          meter.units += 1;
          if (subscriber.after < head.number) deliveries.push([subscriber, event]);
        }
      });
    }
    return this.pending && !this.stopped;
  }
}

/**
 * The replica's turns of delivery: one slice per turn of the event loop
 * (`setImmediate`, so timers and I/O, another company's queries among them, run
 * between two slices), shared by the lists with work waiting, each in turn.
 */
export class Slices {
  private readonly ready = new Set<Outbox>();
  private scheduled = false;

  /** `schedule`: how the next slice is put on the loop (tests count the turns). */
  constructor(
    private readonly meter: WorkMeter,
    private readonly limits: SliceLimits = SLICE,
    private readonly schedule: (slice: () => void) => void = setImmediate,
  ) {}

  want(outbox: Outbox): void {
    this.ready.add(outbox);
    if (this.scheduled) return;
    this.scheduled = true;
    this.schedule(() => this.slice());
  }

  private slice(): void {
    this.scheduled = false;
    const budget: Budget = { units: this.meter.units + this.limits.units, deliveries: this.limits.deliveries };
    for (const outbox of [...this.ready]) {
      if (this.meter.units >= budget.units || budget.deliveries <= 0) break;
      // Taken out and, with work left, put back at the end: the lists take turns.
      this.ready.delete(outbox);
      if (outbox.run(budget, this.meter)) this.ready.add(outbox);
    }
    if (this.ready.size > 0 && !this.scheduled) {
      this.scheduled = true;
      this.schedule(() => this.slice());
    }
  }
}

function eventOf(change: RecordChange): LiveEvent {
  return { kind: change.kind, id: change.id, ...(change.record && { record: change.record }) };
}
