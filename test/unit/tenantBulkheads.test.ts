import { TenantBulkheads } from '../../src/upstream/resilience/bulkhead';
import { UpstreamError } from '../../src/upstream/errors';

/** A call that runs until the test lets it end. */
function held() {
  let finish!: () => void;
  const ended = new Promise<void>((resolve) => (finish = resolve));
  return { finish, call: () => ended.then(() => 'done') };
}

describe('TenantBulkheads', () => {
  it('runs up to its concurrency, queues up to its queue, refuses past it, and keeps nothing once idle', async () => {
    const events: string[] = [];
    const bulkheads = new TenantBulkheads({ concurrency: 1, queue: 1, onQueued: () => events.push('queued'), onRejected: () => events.push('rejected') });
    const signal = new AbortController().signal;
    const first = held();
    const running = bulkheads.run('t1', signal, first.call);
    let secondStarted = false;
    const queued = bulkheads.run('t1', signal, async () => ((secondStarted = true), 'second'));
    await expect(bulkheads.run('t1', signal, async () => 'third')).rejects.toMatchObject({ code: 'UPSTREAM_RATE_LIMITED' });
    // Another tenant is not held up by the first one's calls.
    await expect(bulkheads.run('t2', signal, async () => 'other')).resolves.toBe('other');
    expect(events).toEqual(['queued', 'rejected']);
    expect(secondStarted).toBe(false);
    first.finish();
    await expect(running).resolves.toBe('done');
    await expect(queued).resolves.toBe('second');
    expect(bulkheads.size).toBe(0);
  });

  it('cancels a waiter whose request ended while it waited, and hands the slot to the next', async () => {
    const bulkheads = new TenantBulkheads({ concurrency: 1, queue: 2 });
    const live = new AbortController().signal;
    const gone = new AbortController();
    const first = held();
    const running = bulkheads.run('t1', live, first.call);
    const abandoned = bulkheads.run('t1', gone.signal, async () => 'never');
    const next = bulkheads.run('t1', live, async () => 'next');
    gone.abort();
    first.finish();
    await expect(abandoned).rejects.toBeInstanceOf(UpstreamError);
    await expect(running).resolves.toBe('done');
    await expect(next).resolves.toBe('next');
    expect(bulkheads.size).toBe(0);
  });

  it('refuses a call whose request is already over, without taking a slot', async () => {
    const bulkheads = new TenantBulkheads();
    const over = new AbortController();
    over.abort();
    await expect(bulkheads.run('t1', over.signal, async () => 'never')).rejects.toBeInstanceOf(UpstreamError);
    expect(bulkheads.size).toBe(0);
  });
  it('lets a waiter whose request ended go at once, and gives its queue place to another', async () => {
    const bulkheads = new TenantBulkheads({ concurrency: 1, queue: 1 });
    const live = new AbortController().signal;
    const gone = new AbortController();
    const first = held();
    const running = bulkheads.run('t1', live, first.call);
    const abandoned = bulkheads.run('t1', gone.signal, async () => 'never');
    gone.abort();
    // Rejected while the running call still holds its slot, not when it ends.
    await expect(abandoned).rejects.toBeInstanceOf(UpstreamError);
    // Its queue place is free again.
    const next = bulkheads.run('t1', live, async () => 'next');
    first.finish();
    await expect(running).resolves.toBe('done');
    await expect(next).resolves.toBe('next');
    expect(bulkheads.size).toBe(0);
  });
});
