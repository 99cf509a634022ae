import { cancelledError } from './errors';

/**
 * The key of one upstream page for one tenant: the tenant and the exact URL the call
 * would send (origin, path, page reference, page size and any filter the URL
 * carries). Two requests share a call only when this key is equal, so tenants never
 * share one, and whatever a later change puts on the URL is part of the key at once.
 */
export function coalescingKey(tenantId: string, url: URL): string {
  return `${tenantId}\u0000${url.href}`;
}

interface SharedCall<T> {
  readonly controller: AbortController;
  promise: Promise<T>;
  waiters: number;
  settled: boolean;
}

/**
 * In-flight coalescing: concurrent callers that need the same thing share one call
 * while it is in flight. Nothing is kept after the call settles (no staleness beyond
 * one round trip, no cached errors). Each caller waits with its own signal: one
 * caller's abort or deadline lets that caller go, and the shared call is cancelled
 * only when every caller has gone.
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

  /**
   * Joins the call in flight for `key`, or starts one with `start`. `start` gets a
   * signal that aborts only when every waiter has left.
   */
  run(key: string, signal: AbortSignal | undefined, start: (signal: AbortSignal) => Promise<T>): Promise<T> {
    if (signal?.aborted) return Promise.reject(cancelledError());
    let call = this.calls.get(key);
    if (!call) {
      const controller = new AbortController();
      const created: SharedCall<T> = { controller, promise: Promise.resolve() as Promise<T>, waiters: 0, settled: false };
      created.promise = start(controller.signal).finally(() => {
        created.settled = true;
        if (this.calls.get(key) === created) this.calls.delete(key);
      });
      this.calls.set(key, created);
      call = created;
    }
    return this.wait(key, call, signal);
  }

  private wait(key: string, call: SharedCall<T>, signal: AbortSignal | undefined): Promise<T> {
    call.waiters += 1;
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => {
        call.waiters -= 1;
        if (call.waiters === 0 && !call.settled) {
          // The last waiter left: stop the call, and let a newcomer start a fresh one.
          if (this.calls.get(key) === call) this.calls.delete(key);
          call.controller.abort();
        }
        reject(cancelledError());
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      call.promise.then(
        (value) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(value);
        },
        (error: unknown) => {
          signal?.removeEventListener('abort', onAbort);
          reject(error);
        },
      );
    });
  }
}

