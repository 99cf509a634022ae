import { BulkheadRejectedError, TaskCancelledError, bulkhead, type BulkheadPolicy } from 'cockatiel';
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
 * A bulkhead per tenant (cockatiel's): a limit on one tenant's concurrent upstream
 * calls, with a bounded queue, so one company's burst cannot take every socket of
 * the shared connection pool, starve the other companies, or trip the upstream's
 * rate limits for everyone. A call over the queue fails at once with
 * UPSTREAM_RATE_LIMITED. A tenant's bulkhead is dropped as soon as it is idle, so
 * the map holds only tenants with calls in flight or queued.
 */
export class TenantBulkheads {
  /** Each tenant's bulkhead and the calls running or queued in it. */
  private readonly bulkheads = new Map<string, { readonly policy: BulkheadPolicy; users: number }>();

  constructor(private readonly options: TenantBulkheadOptions = {}) {}

  /** Bulkheads kept now (for tests and diagnostics). */
  get size(): number {
    return this.bulkheads.size;
  }

  async run<T>(tenantId: string, signal: AbortSignal, call: () => Promise<T>): Promise<T> {
    const entry = this.for(tenantId);
    const bulkhead = entry.policy;
    entry.users += 1;
    if (bulkhead.executionSlots <= 0 && bulkhead.queueSlots > 0) this.options.onQueued?.();
    try {
      return await bulkhead.execute(call, signal);
    } catch (error) {
      if (error instanceof BulkheadRejectedError) {
        this.options.onRejected?.();
        throw new UpstreamError('UPSTREAM_RATE_LIMITED', `too many upstream calls are waiting for tenant ${tenantId}; retry shortly`, { momentary: true });
      }
      if (error instanceof TaskCancelledError) throw cancelledError();
      throw error;
    } finally {
      // Idle (no call running or queued): a fresh bulkhead is the same thing, so keep none.
      entry.users -= 1;
      if (entry.users === 0) this.bulkheads.delete(tenantId);
    }
  }

  private for(tenantId: string): { readonly policy: BulkheadPolicy; users: number } {
    let entry = this.bulkheads.get(tenantId);
    if (!entry) {
      entry = { policy: bulkhead(this.options.concurrency ?? 16, this.options.queue ?? 256), users: 0 };
      this.bulkheads.set(tenantId, entry);
    }
    return entry;
  }
}
