/**
 * One poller: a tenant's list (and filter scope) polled on a jittered timer while it
 * has subscribers, its changes found by id and content (snapshot.ts) and handed to
 * the hub. Whether this replica polls or only listens is the coordinator's call
 * (coordinator.ts: a Redis lease, or always in a single replica).
 */
import { isUpstreamError } from '../upstream/errors';
import type { AnyResource, ListFilter, UpstreamRecord } from '../upstream/resources';
import type { ListReader } from './listReader';
import type { PollBudget } from './pollBudget';
import { apply, diff, type RecordChange, type Snapshot } from './snapshot';

/** Each poll's delay is the interval times a factor from 1 - JITTER to 1 + JITTER, so companies do not poll in step. */
export const POLL_JITTER = 0.1;

/**
 * Upstream errors that end every subscription of the poller with their code: the
 * scope was withdrawn, the tenant's credentials or token binding no longer hold. Other
 * failures (unavailable, rate limited, a bad page) skip one poll and are tried again.
 */
const FATAL_CODES = new Set(['FORBIDDEN', 'UPSTREAM_UNAUTHORIZED', 'UPSTREAM_MISCONFIGURED']);

export interface PollerHooks {
  /** Changes to deliver to this replica's subscribers (already deduplicated). */
  deliver(changes: readonly RecordChange[]): void;
  /** The poller cannot go on (scope withdrawn, tenant refused): end its subscribers with `error`. */
  fail(error: Error): void;
  /** Whether this replica polls this key now (and keeps its lease); false: another replica does and publishes. */
  lead(delayMs: number): Promise<boolean>;
  /** Changes this replica found, for the other replicas' subscribers. */
  publish(changes: readonly RecordChange[]): void;
  /** One poll ended: outcome, duration in s, page calls. */
  polled(outcome: 'ok' | 'error' | 'fatal', seconds: number, calls: number): void;
  /** The next delay was stretched by the global budget. */
  stretched(factor: number): void;
  /** The snapshot grew or shrank by `entries` (for the memory budget). */
  resized(entries: number): void;
}

export interface PollerOptions {
  readonly key: string;
  readonly tenantId: string;
  readonly resource: AnyResource;
  readonly filter: ListFilter | undefined;
  readonly intervalMs: number;
  readonly read: ListReader;
  readonly budget: PollBudget;
  readonly hooks: PollerHooks;
  /** For tests: jitter source (0..1). */
  readonly random?: () => number;
}

export class Poller {
  private snapshot: Snapshot | null = null;
  private timer: NodeJS.Timeout | undefined;
  private readonly controller = new AbortController();
  private stopped = false;
  private polling: Promise<void> | undefined;
  private readonly random: () => number;

  constructor(private readonly options: PollerOptions) {
    this.random = options.random ?? Math.random;
  }

  get key(): string {
    return this.options.key;
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
    this.schedule(Math.min(1_000, this.options.intervalMs) * this.random(), true);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.controller.abort();
    this.options.budget.forget(this);
    this.options.hooks.resized(-this.size);
    this.snapshot = null;
  }

  /** What another replica's poll found: those not yet seen here are delivered. */
  received(changes: readonly RecordChange[]): void {
    if (this.stopped || !this.snapshot) return;
    const before = this.snapshot.size;
    const fresh = changes.filter((change) => apply(this.snapshot!, change));
    this.options.hooks.resized(this.snapshot.size - before);
    if (fresh.length > 0) this.options.hooks.deliver(fresh);
  }

  /** Waits for a poll under way (tests). */
  settled(): Promise<void> {
    return this.polling ?? Promise.resolve();
  }

  private nextDelay(): number {
    const stretch = this.options.budget.stretch();
    if (stretch > 1) this.options.hooks.stretched(stretch);
    const jitter = 1 - POLL_JITTER + 2 * POLL_JITTER * this.random();
    return this.options.intervalMs * stretch * jitter;
  }

  private schedule(delayMs: number, baseline = false): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.polling = this.tick(baseline).finally(() => {
        this.polling = undefined;
        this.schedule(this.nextDelay());
      });
    }, delayMs);
    this.timer.unref();
  }

  private async tick(baseline: boolean): Promise<void> {
    const { hooks } = this.options;
    // Without a baseline yet (its first read failed), it reads again whoever leads.
    if (!baseline && this.snapshot && !(await hooks.lead(this.options.intervalMs * this.options.budget.stretch()))) return;
    if (this.stopped) return;
    const started = performance.now();
    let calls = 0;
    try {
      const read = await this.options.read(this.options.tenantId, this.options.resource, this.controller.signal);
      calls = read.calls;
      if (this.stopped) return;
      this.options.budget.note(this, read.calls, this.options.intervalMs);
      const records = this.inScope(read.records);
      const before = this.size;
      if (!this.snapshot) {
        this.snapshot = new Map(diff(new Map(), records).next);
      } else {
        const { changes, next } = diff(this.snapshot, records);
        this.snapshot = next;
        if (changes.length > 0) {
          hooks.deliver(changes);
          hooks.publish(changes);
        }
      }
      hooks.resized(this.size - before);
      hooks.polled('ok', (performance.now() - started) / 1000, calls);
    } catch (error) {
      if (this.stopped) return;
      const fatal = isUpstreamError(error) && FATAL_CODES.has(error.code);
      hooks.polled(fatal ? 'fatal' : 'error', (performance.now() - started) / 1000, calls);
      if (fatal) hooks.fail(error as Error);
    }
  }

  private inScope(records: readonly UpstreamRecord[]): readonly UpstreamRecord[] {
    const { resource, filter } = this.options;
    if (!filter || !resource.matches || Object.keys(filter).length === 0) return records;
    return records.filter((record) => resource.matches!(record, filter));
  }
}
