/**
 * One poller: a company's list polled on a jittered timer while it has subscribers
 * or is watched for queries (watch.ts), whatever the subscribers' filters (the hub
 * applies each subscriber's filter to the changes of one walk). Its changes are found by id and content (snapshot.ts) and handed to its
 * listener, the hub. Whether this replica polls or only listens is the coordinator's
 * call (coordinator.ts: a Redis lease, or always in a single replica).
 */
import { isUpstreamError } from '../upstream/errors';
import type { AnyResource, UpstreamRecord } from '../upstream/resources';
import type { Coordinator } from './coordinator';
import type { ListRead, ListReader } from './listReader';
import type { LiveEvents } from './metrics';
import type { PollBudget } from './pollBudget';
import { apply, diffInSlices, type RecordChange, type Snapshot, type SnapshotMemory } from './snapshot';

/** Each poll's delay is the interval times a factor from 1 - JITTER to 1 + JITTER, so companies do not poll in step. */
export const POLL_JITTER = 0.1;

/**
 * Upstream errors that end every subscription of the poller with their code: the
 * scope was withdrawn, the tenant's credentials or token binding no longer hold. Other
 * failures (unavailable, rate limited, a bad page) skip one poll and are tried again.
 */
const FATAL_CODES = new Set(['FORBIDDEN', 'UPSTREAM_UNAUTHORIZED', 'UPSTREAM_MISCONFIGURED']);

/** Where a poller's findings go: the hub's subscribers of its key. */
export interface PollerListener {
  /** Changes new to this replica; `before`: the previous version of each updated or removed record of a filterable list. */
  changes(changes: readonly RecordChange[], before: ReadonlyMap<string, UpstreamRecord>): void;
  /** The poller cannot go on (scope withdrawn, tenant refused): its subscribers end with `error`. */
  failed(error: Error): void;
  /** Once per interval, after a poll or a turn this replica only listened (`calls` undefined): what the last walk cost, for the watching choice (watch.ts). */
  ticked?(calls: number | undefined): void;
}

/** What every poller of a replica shares. */
export interface PollerServices {
  /** The poll interval before jitter and stretching. */
  readonly intervalMs: number;
  readonly read: ListReader;
  readonly budget: PollBudget;
  readonly coordinator: Coordinator;
  readonly events: LiveEvents;
  readonly memory: SnapshotMemory;
  /** For tests: jitter source (0..1). */
  readonly random?: () => number;
  /**
   * Told when a company's list changed: `polled` by this replica (it holds the lease:
   * it tells the gateways), or heard from another. What is kept of the list is dropped
   * either way (docs/caching.md, "Invalidation").
   */
  readonly onChanged?: (tenantId: string, list: string, polled: boolean) => void;
  /**
   * Told when this replica's walk of a company's list saw no change: what is kept of the
   * list may be confirmed by it (docs/caching.md, "Watched lists"). Only a walk this
   * replica made: a replica that only listens hears changes, never a confirmation.
   */
  readonly onQuiet?: (tenantId: string, list: string, read: ListRead) => void;
}

export class Poller {
  private snapshot: Snapshot | null = null;
  /** The last version of each record, kept for a filterable list only (a subscriber's filter needs what a record was). */
  private records: Map<string, UpstreamRecord> | null = null;
  private timer: NodeJS.Timeout | undefined;
  private readonly controller = new AbortController();
  private stopped = false;
  private leading = false;
  /**
   * What other replicas sent while a poll's diff runs in slices: applied once the new
   * snapshot is in place, so the diff compares with a snapshot that holds still and a
   * change is neither lost nor delivered twice.
   */
  private heard: Array<readonly RecordChange[]> | undefined;
  private readonly random: () => number;

  constructor(
    readonly key: string,
    private readonly tenantId: string,
    private readonly resource: AnyResource,
    private readonly services: PollerServices,
    private readonly listener: PollerListener,
  ) {
    this.random = services.random ?? Math.random;
  }

  /** Records the poller keeps a fingerprint of. */
  get size(): number {
    return this.snapshot?.size ?? 0;
  }

  /**
   * The first poll (the baseline every later change is measured against) runs within
   * a second, jittered, whether or not this replica leads: its subscribers must see
   * removals of records it never saw change, and it takes over the poll if the
   * leader goes.
   */
  start(): void {
    this.services.coordinator.listen(this.key, (changes) => this.received(changes));
    this.schedule(Math.min(1_000, this.services.intervalMs) * this.random(), true);
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.timer);
    this.controller.abort();
    const { budget, coordinator, events, memory } = this.services;
    budget.forget(this.tenantId, this);
    coordinator.forget(this.key);
    if (this.leading) events.livePollersLeading(-1);
    memory.resize(-this.size, -(this.records?.size ?? 0));
    this.snapshot = null;
    this.records = null;
  }

  /** What another replica's poll found: those not yet seen here are delivered. */
  received(changes: readonly RecordChange[]): void {
    if (this.stopped || !this.snapshot) return;
    if (this.heard) {
      this.heard.push(changes);
      return;
    }
    // What a replica sent is checked before any of it is applied: a change without a string id is no change.
    const wellFormed = changes.filter((change) => typeof change?.id === 'string' && typeof change.fingerprint === 'number');
    const size = this.snapshot.size;
    const fresh = wellFormed.filter((change) => apply(this.snapshot!, change));
    this.services.memory.resize(this.snapshot.size - size, 0);
    if (wellFormed.length > 0) this.services.onChanged?.(this.tenantId, this.resource.name, false);
    this.merge(fresh);
  }

  private stretch(): number {
    return this.services.budget.stretch(this.tenantId);
  }

  private nextDelay(): number {
    const stretch = this.stretch();
    this.services.events.livePollStretch(this.services.budget.largestStretch(), stretch > 1);
    const jitter = 1 - POLL_JITTER + 2 * POLL_JITTER * this.random();
    return this.services.intervalMs * stretch * jitter;
  }

  private schedule(delayMs: number, baseline = false): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      void this.tick(baseline).then(
        (calls) => this.ticked(calls),
        () => this.ticked(undefined),
      ).finally(() => this.schedule(this.nextDelay()));
    }, delayMs);
    this.timer.unref();
  }

  private async lead(): Promise<boolean> {
    const leading = await this.services.coordinator.lead(this.key, this.services.intervalMs * this.stretch());
    if (leading !== this.leading && !this.stopped) {
      this.services.events.livePollersLeading(leading ? 1 : -1);
      this.leading = leading;
    }
    return leading;
  }

  private ticked(calls: number | undefined): void {
    if (!this.stopped) this.listener.ticked?.(calls);
  }

  /** One poll; the page calls of its walk, or undefined when this replica did not walk (it listens, or the walk failed). */
  private async tick(baseline: boolean): Promise<number | undefined> {
    const { events, coordinator } = this.services;
    const list = this.resource.name;
    // Without a baseline yet (its first read failed), it reads again whoever leads.
    if (!baseline && this.snapshot && !(await this.lead())) return undefined;
    if (this.stopped) return undefined;
    const started = performance.now();
    try {
      const read = await this.services.read(this.tenantId, this.resource, this.controller.signal);
      if (this.stopped) return undefined;
      this.services.budget.note(this.tenantId, this, read.calls, this.services.intervalMs);
      if (!this.snapshot) {
        // The baseline: what later changes are measured against; it delivers nothing.
        const { next } = await diffInSlices(new Map(), read.records);
        if (this.stopped) return undefined;
        this.snapshot = next;
        if (this.resource.matches) this.records = new Map(read.records.map((record) => [record.id, record]));
        this.services.memory.resize(this.snapshot.size, this.records?.size ?? 0);
        this.services.onQuiet?.(this.tenantId, list, read);
      } else {
        const before = this.size;
        this.heard = [];
        let found: Awaited<ReturnType<typeof diffInSlices>>;
        let heard: Array<readonly RecordChange[]>;
        try {
          found = await diffInSlices(this.snapshot, read.records);
        } finally {
          heard = this.heard;
          this.heard = undefined;
        }
        if (this.stopped) return undefined;
        const { changes, next } = found;
        this.snapshot = next;
        this.services.memory.resize(this.size - before, 0);
        if (changes.length > 0) {
          this.services.onChanged?.(this.tenantId, list, true);
          this.merge(changes);
          coordinator.publish(this.key, changes);
        }
        for (const message of heard) this.received(message);
        // What other replicas sent meanwhile counts as a change too: only a walk that
        // saw none, and heard none, confirms what is kept.
        if (changes.length === 0 && heard.length === 0) this.services.onQuiet?.(this.tenantId, list, read);
      }
      events.livePolled(list, 'ok', (performance.now() - started) / 1000);
      return read.calls;
    } catch (error) {
      if (this.stopped) return undefined;
      const fatal = isUpstreamError(error) && FATAL_CODES.has(error.code);
      events.livePolled(list, fatal ? 'fatal' : 'error', (performance.now() - started) / 1000);
      if (fatal) this.listener.failed(error as Error);
      return undefined;
    }
  }

  /** Hands changes (already applied to the snapshot) to the listener, with the records' previous versions, and keeps the new ones. */
  private merge(changes: readonly RecordChange[]): void {
    if (changes.length === 0) return;
    const before = new Map<string, UpstreamRecord>();
    if (this.records) {
      const size = this.records.size;
      for (const change of changes) {
        const previous = this.records.get(change.id);
        if (previous) before.set(change.id, previous);
        if (change.record) this.records.set(change.id, change.record);
        else this.records.delete(change.id);
      }
      this.services.memory.resize(0, this.records.size - size);
    }
    for (const change of changes) this.services.events.liveChanged(this.resource.name, change.kind);
    this.listener.changes(changes, before);
  }
}
