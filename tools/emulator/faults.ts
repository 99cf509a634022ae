import type { Reply } from './http';
import type { FaultSpec } from './types';

/** Injected faults, first in first out; each one is used up after `times` requests. */
export class FaultQueue {
  private queue: Array<{ spec: FaultSpec; remaining: number }> = [];
  private readonly endpoints: ReadonlySet<string>;

  /** `lists`: the names of the served lists; `token` is always an endpoint. */
  constructor(lists: Iterable<string>) {
    this.endpoints = new Set(['token', ...lists]);
  }

  add(spec: FaultSpec): void {
    if (!this.endpoints.has(spec.endpoint)) throw new RangeError(`injectFault: unknown endpoint ${String(spec.endpoint)}`);
    const times = spec.times ?? 1;
    if (!(times >= 1) || (Number.isFinite(times) && !Number.isInteger(times))) {
      throw new RangeError(`injectFault: times must be a positive integer or Infinity, got ${times}`);
    }
    if (spec.status !== undefined && !(Number.isInteger(spec.status) && spec.status >= 100 && spec.status <= 599)) {
      throw new RangeError(`injectFault: status must be an HTTP status code, got ${spec.status}`);
    }
    // A copy: a test mutating its spec object afterwards must not change the queued fault.
    this.queue.push({ spec: { ...spec, ...(spec.headers && { headers: { ...spec.headers } }) }, remaining: times });
  }

  clear(): void {
    this.queue = [];
  }

  /** The first fault for this endpoint and tenant, counted as used; undefined when none. */
  take(endpoint: FaultSpec['endpoint'], tenantId: string | undefined): FaultSpec | undefined {
    const index = this.queue.findIndex(
      (entry) => entry.spec.endpoint === endpoint && (entry.spec.tenantId === undefined || entry.spec.tenantId === tenantId),
    );
    if (index < 0) return undefined;
    const entry = this.queue[index]!;
    entry.remaining -= 1;
    if (entry.remaining <= 0) this.queue.splice(index, 1);
    return entry.spec;
  }
}

/** The reply a fault sends instead of the normal one; 'hang' for no reply at all. */
export function faultReply(spec: FaultSpec): Reply | 'hang' {
  if (spec.hang) return 'hang';
  const status = spec.status ?? 500;
  const body = spec.body ?? JSON.stringify({ detail: `injected fault (${status})` });
  return { status, body, ...(spec.headers && { headers: spec.headers }) };
}
