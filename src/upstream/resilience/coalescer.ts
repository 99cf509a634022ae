import { cancelledError } from '../errors';

/**
 * The key of one upstream page for one tenant: the tenant and the exact URL the call
 * would send (origin, path, page reference, page size and any filter the URL
 * carries). Two requests share a call only when this key is equal, so tenants never
 * share one, and whatever a later change puts on the URL is part of the key at once.
 */
export function coalescingKey(tenantId: string, url: string): string {
  return `${tenantId}\u0000${url}`;
}

/** What the started call can ask about the callers waiting on it. */
export interface SharedCallView {
  /**
   * The latest deadline (`performance.now()` time) of the callers still waiting: a
   * caller that joins late keeps its own time for retries, and one that has left no
   * longer holds the call to its deadline.
   */
  deadlineAt(): number;
}

interface SharedCall<T> extends SharedCallView {
  readonly controller: AbortController;
  promise: Promise<T>;
  /** The deadline of each waiter still there. */
  readonly waiters: Set<{ readonly deadlineAt: number }>;
  settled: boolean;
}

/**
 * In-flight coalescing: concurrent callers that need the same thing share one call
 * while it is in flight. Nothing is kept after the call settles (no staleness beyond
 * one round trip, no cached errors). Each caller waits with its own signal: one
 * caller's abort or deadline lets that caller go, and the shared call is cancelled
 * only when every caller has gone (with the last caller's abort reason, so a call
 * ended by its callers' deadlines reads as timed out, not as a client gone away).
 * Each caller also keeps its own deadline: the call retries within the latest one.
 */
export class InFlight<T> {
  private readonly calls = new Map<string, SharedCall<T>>();

  /** Calls in flight now (for tests and diagnostics). */
  get size(): number {
    return this.calls.size;
  }

  /** Whether a call for `key` is in flight (a `run` now would join it). */
  has(key: string): boolean {
    return this.calls.has(key);
  }

  /** The call in flight for `key`, which a `run` now would join (the same object its `start` got). */
  get(key: string): SharedCallView | undefined {
    return this.calls.get(key);
  }

  /**
   * Joins the call in flight for `key`, or starts one with `start`. `start` gets a
   * signal that aborts only when every waiter has left, and a view of the waiters'
   * deadlines. `deadlineAt` is this caller's (`performance.now()` time).
   */
  run(key: string, signal: AbortSignal | undefined, start: (signal: AbortSignal, call: SharedCallView) => Promise<T>, deadlineAt = Infinity): Promise<T> {
    if (signal?.aborted) return Promise.reject(cancelledError());
    let call = this.calls.get(key);
    if (!call) {
      const controller = new AbortController();
      const waiters = new Set<{ readonly deadlineAt: number }>();
      const created: SharedCall<T> = {
        controller,
        promise: Promise.resolve() as Promise<T>,
        waiters,
        settled: false,
        deadlineAt: () => Math.max(0, ...[...waiters].map((waiter) => waiter.deadlineAt)),
      };
      created.promise = start(controller.signal, created).finally(() => {
        created.settled = true;
        if (this.calls.get(key) === created) this.calls.delete(key);
      });
      this.calls.set(key, created);
      call = created;
    }
    return this.wait(key, call, signal, deadlineAt);
  }

  private wait(key: string, call: SharedCall<T>, signal: AbortSignal | undefined, deadlineAt: number): Promise<T> {
    const waiter = { deadlineAt };
    call.waiters.add(waiter);
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => {
        call.waiters.delete(waiter);
        if (call.waiters.size === 0 && !call.settled) {
          // The last waiter left: stop the call, and let a newcomer start a fresh one.
          if (this.calls.get(key) === call) this.calls.delete(key);
          call.controller.abort(signal?.reason);
        }
        reject(cancelledError());
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      call.promise.then(
        (value) => {
          signal?.removeEventListener('abort', onAbort);
          call.waiters.delete(waiter);
          resolve(value);
        },
        (error: unknown) => {
          signal?.removeEventListener('abort', onAbort);
          call.waiters.delete(waiter);
          reject(error);
        },
      );
    });
  }
}

