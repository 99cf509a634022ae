import { UpstreamError, cancelledError } from '../errors';

export interface TenantBulkheadOptions {
  /** Concurrent upstream calls one tenant may have in flight. Default 16. */
  readonly concurrency?: number;
  /** Calls of one tenant that may wait for a slot; more are refused. Default 256. */
  readonly queue?: number;
  /** A call had to wait for a slot. */
  readonly onQueued?: () => void;
  /** A call was refused because the tenant's queue was full. */
  readonly onRejected?: () => void;
}

/**
 * A bulkhead per tenant: a limit on one tenant's concurrent upstream
 * calls, with a bounded queue, so one company's burst cannot take every socket of
 * the shared connection pool, starve the other companies, or trip the upstream's
 * rate limits for everyone. A call over the queue fails at once with
 * UPSTREAM_RATE_LIMITED. A tenant's bulkhead is dropped as soon as it is idle, so
 * the map holds only tenants with calls in flight or queued.
 */
export class TenantBulkheads {
  /** Each tenant's calls running (slots taken) and waiting; kept only while a call runs. */
  private readonly bulkheads = new Map<string, TenantSlots>();
  private readonly concurrency: number;
  private readonly queue: number;

  constructor(private readonly options: TenantBulkheadOptions = {}) {
    this.concurrency = options.concurrency ?? 16;
    this.queue = options.queue ?? 256;
  }

  /** Bulkheads kept now (for tests and diagnostics). */
  get size(): number {
    return this.bulkheads.size;
  }

  /**
   * Runs `call` in one of the tenant's slots, after waiting for one if all are taken.
   * A counter and a queue per tenant with calls in flight, made when its first call
   * starts and dropped when its last ends: on a load where each company has one call at
   * a time (most of them), a whole policy object per call (cockatiel's, with its event
   * emitters and executor) and its extra async frame were pure overhead.
   */
  async run<T>(tenantId: string, signal: AbortSignal, call: () => Promise<T>): Promise<T> {
    if (signal.aborted) throw cancelledError();
    let slots = this.bulkheads.get(tenantId);
    if (!slots) {
      slots = { active: 0, waiting: [] };
      this.bulkheads.set(tenantId, slots);
    }
    if (slots.active < this.concurrency) slots.active += 1;
    else {
      if (slots.waiting.length >= this.queue) {
        this.options.onRejected?.();
        throw new UpstreamError('UPSTREAM_RATE_LIMITED', `too many upstream calls are waiting for tenant ${tenantId}; retry shortly`, { momentary: true });
      }
      this.options.onQueued?.();
      // Resolved when a finishing call hands its slot over (still counted in `active`);
      // a waiter whose request ends leaves the queue at once, its place free for another.
      const queue = slots.waiting;
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => {
          const at = queue.indexOf(resume);
          if (at >= 0) queue.splice(at, 1);
          reject(cancelledError());
        };
        const resume = () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        };
        signal.addEventListener('abort', onAbort, { once: true });
        queue.push(resume);
      });
    }
    try {
      return await call();
    } finally {
      this.release(tenantId, slots);
    }
  }

  /** A call ended: its slot goes to the first waiter (waiters whose request ended have left the queue), or is freed; an idle tenant keeps nothing. */
  private release(tenantId: string, slots: TenantSlots): void {
    const next = slots.waiting.shift();
    if (next) return next();
    slots.active -= 1;
    if (slots.active === 0) this.bulkheads.delete(tenantId);
  }
}

interface TenantSlots {
  active: number;
  /** Each waiter's resume: it runs in the slot handed over. */
  readonly waiting: Array<() => void>;
}
