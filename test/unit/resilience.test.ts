import { ShardBreakers, ShardFault, type BreakerState } from '../../src/upstream/resilience/breaker';
import { TenantBulkheads } from '../../src/upstream/resilience/bulkhead';
import { CallBudget, EMPTY_PAGES_TOLERATED } from '../../src/upstream/resilience/callBudget';
import { UpstreamError } from '../../src/upstream/errors';
import { RetryPolicy } from '../../src/upstream/resilience/retry';
import { RetryAfterWindows } from '../../src/upstream/resilience/retryAfterWindows';
import { OTHER_TENANT_ID, TENANT_ID } from '../helpers/fixtures';

const fault = () => new ShardFault(new UpstreamError('UPSTREAM_UNAVAILABLE', 'the upstream answered 500'));

describe('ShardBreakers', () => {
  afterEach(() => jest.useRealTimers());

  it('opens after consecutive shard faults, fails fast without calling, probes once and closes by itself', async () => {
    jest.useFakeTimers({ now: 1_000_000 });
    const states: Array<[string, BreakerState]> = [];
    const breakers = new ShardBreakers({ failuresToOpen: 3, openMs: 1_000, onStateChange: (origin, state) => states.push([origin, state]) });
    const failing = jest.fn(async () => {
      throw fault();
    });
    for (let i = 0; i < 3; i += 1) await expect(breakers.run('https://a', failing)).rejects.toBeInstanceOf(ShardFault);
    expect(breakers.state('https://a')).toBe('open');
    await expect(breakers.run('https://a', failing)).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE', message: expect.stringContaining('circuit breaker open') });
    expect(failing).toHaveBeenCalledTimes(3);
    // Another shard is not affected.
    await expect(breakers.run('https://b', async () => 'ok')).resolves.toBe('ok');
    jest.setSystemTime(1_000_000 + 1_001);
    await expect(breakers.run('https://a', async () => 'healed')).resolves.toBe('healed');
    expect(breakers.state('https://a')).toBe('closed');
    expect(states).toEqual([
      ['https://a', 'open'],
      ['https://a', 'half-open'],
      ['https://a', 'closed'],
    ]);
  });

  it('counts neither 4xx-like errors nor successes in between as a run of faults', async () => {
    const breakers = new ShardBreakers({ failuresToOpen: 2 });
    await expect(breakers.run('https://a', async () => { throw fault(); })).rejects.toBeInstanceOf(ShardFault);
    await expect(breakers.run('https://a', async () => { throw new UpstreamError('FORBIDDEN', '403'); })).rejects.toMatchObject({ code: 'FORBIDDEN' });
    await expect(breakers.run('https://a', async () => 'ok')).resolves.toBe('ok');
    await expect(breakers.run('https://a', async () => { throw fault(); })).rejects.toBeInstanceOf(ShardFault);
    expect(breakers.state('https://a')).toBe('closed');
  });
});

describe('TenantBulkheads', () => {
  it('limits one tenant, queues within bound, refuses beyond it, and leaves other tenants alone', async () => {
    let queued = 0;
    let rejected = 0;
    const bulkheads = new TenantBulkheads({ concurrency: 2, queue: 1, onQueued: () => (queued += 1), onRejected: () => (rejected += 1) });
    const release: Array<() => void> = [];
    let running = 0;
    let peak = 0;
    const held = () =>
      new Promise<string>((resolve) => {
        running += 1;
        peak = Math.max(peak, running);
        release.push(() => {
          running -= 1;
          resolve('done');
        });
      });
    const signal = new AbortController().signal;
    const calls = [bulkheads.run(TENANT_ID, signal, held), bulkheads.run(TENANT_ID, signal, held), bulkheads.run(TENANT_ID, signal, held)];
    await expect(bulkheads.run(TENANT_ID, signal, held)).rejects.toMatchObject({ code: 'UPSTREAM_RATE_LIMITED' });
    await expect(bulkheads.run(OTHER_TENANT_ID, signal, async () => 'other tenant')).resolves.toBe('other tenant');
    expect(queued).toBe(1);
    expect(rejected).toBe(1);
    while (release.length > 0) {
      release.shift()!();
      await new Promise((resolve) => setImmediate(resolve));
    }
    await expect(Promise.all(calls)).resolves.toEqual(['done', 'done', 'done']);
    expect(peak).toBe(2);
  });
});

describe('RetryPolicy', () => {
  it('draws each wait from 0 to a doubling ceiling (full jitter), never past the retries or the time left', () => {
    const policy = new RetryPolicy({ maxRetries: 3, initialDelayMs: 100, maxDelayMs: 1_000 });
    const firsts = new Set<number>();
    for (let i = 0; i < 200; i += 1) {
      const schedule = policy.schedule();
      const waits = [schedule.next(60_000), schedule.next(60_000), schedule.next(60_000), schedule.next(60_000)];
      expect(waits[3]).toBeUndefined();
      waits.slice(0, 3).forEach((wait, attempt) => {
        expect(wait).toBeGreaterThanOrEqual(0);
        expect(wait).toBeLessThanOrEqual(Math.min(1_000, 100 * 2 ** (attempt + 1)));
      });
      firsts.add(Math.round(waits[0]!));
    }
    // Spread, not a synchronised wave: 200 first retries land on many different times.
    expect(firsts.size).toBeGreaterThan(50);
    expect(policy.schedule().next(0)).toBeUndefined();
  });
});

describe('RetryAfterWindows', () => {
  it('keeps a window per tenant or shard until it ends', () => {
    let now = 0;
    const windows = new RetryAfterWindows({ now: () => now });
    expect(windows.open('tenant', TENANT_ID, 30)).toBe(30);
    windows.open('tenant', TENANT_ID, 5); // a shorter one never shortens a window in force
    expect(windows.check('tenant', TENANT_ID)).toEqual({ kind: 'wait', remainingMs: 30_000 });
    expect(windows.check('tenant', OTHER_TENANT_ID)).toEqual({ kind: 'none' });
    expect(windows.check('shard', TENANT_ID)).toEqual({ kind: 'none' });
    now = 29_000;
    expect(windows.check('tenant', TENANT_ID)).toEqual({ kind: 'wait', remainingMs: 1_000 });
    now = 30_000;
    expect(windows.check('tenant', TENANT_ID)).toEqual({ kind: 'none' });
    expect(windows.size).toBe(0);
  });

  it('caps a window, then lets one probe decide: others fail fast meanwhile, an answer ends it, a 503 opens a new one', () => {
    let now = 0;
    const windows = new RetryAfterWindows({ now: () => now, shardMaxSeconds: 60, tenantMaxSeconds: 300 });
    expect(windows.open('shard', 'https://s', 31_536_000)).toBe(60);
    expect(windows.open('tenant', TENANT_ID, 3_600)).toBe(300);
    expect(windows.check('shard', 'https://s')).toEqual({ kind: 'wait', remainingMs: 60_000 });
    now = 60_000;
    const first = windows.check('shard', 'https://s');
    expect(first.kind).toBe('probe');
    expect(windows.check('shard', 'https://s')).toEqual({ kind: 'probing' });
    // A probe that was never answered (cancelled) hands the probe to the next caller.
    windows.probeDone('shard', 'https://s', (first as { probe: object }).probe, false);
    const second = windows.check('shard', 'https://s');
    expect(second.kind).toBe('probe');
    // Its answer was another 503: a new (capped) window.
    expect(windows.open('shard', 'https://s', 3_600)).toBe(60);
    windows.probeDone('shard', 'https://s', (second as { probe: object }).probe, true);
    expect(windows.check('shard', 'https://s')).toEqual({ kind: 'wait', remainingMs: 60_000 });
    now = 120_000;
    const third = windows.check('shard', 'https://s') as { kind: string; probe: object };
    windows.probeDone('shard', 'https://s', third.probe, true);
    expect(windows.check('shard', 'https://s')).toEqual({ kind: 'none' });
  });
});

describe('CallBudget', () => {
  it('allows maxCalls page calls, then fails saying the budget was reached', () => {
    const budget = new CallBudget(3, new AbortController().signal);
    for (let i = 0; i < 3; i += 1) budget.take('locations');
    expect(() => budget.take('locations')).toThrow(expect.objectContaining({ code: 'UPSTREAM_BAD_RESPONSE', message: expect.stringContaining('call budget of this request was reached (3 upstream calls)') }));
    expect(budget.spent).toBe(3);
  });

  it('treats a run of empty pages that claim has_more as a broken chain, per list', () => {
    const budget = new CallBudget(100, new AbortController().signal);
    const empty = { items: [], hasMore: true };
    for (let i = 1; i < EMPTY_PAGES_TOLERATED; i += 1) budget.notePage('shifts', empty);
    budget.notePage('locations', empty);
    budget.notePage('shifts', { items: [1], hasMore: true }); // a page with records ends the run
    for (let i = 1; i < EMPTY_PAGES_TOLERATED; i += 1) budget.notePage('shifts', empty);
    expect(() => budget.notePage('shifts', empty)).toThrow(expect.objectContaining({ code: 'UPSTREAM_BAD_RESPONSE', message: expect.stringContaining('empty shifts pages in a row') }));
    budget.notePage('locations', { items: [], hasMore: false }); // an empty last page is fine
  });
});
