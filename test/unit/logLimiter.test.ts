import { Writable } from 'node:stream';
import { createLogger } from '../../src/observability/logger';
import { createMetrics } from '../../src/observability/metrics';
import { LogLimiter } from '../../src/observability/logLimiter';
import { createUpstreamObserver } from '../../src/observability/upstreamObserver';
import { runInScope } from '../../src/observability/requestScope';
import type { RequestRecord } from '../../src/upstream/observer';
import { UpstreamError } from '../../src/upstream/errors';

describe('LogLimiter', () => {
  it('lets a burst through per key and window, counts the rest, and reports the count once', () => {
    let now = 0;
    const limiter = new LogLimiter<string>({ burst: 3, windowMs: 1_000, now: () => now });
    const allowed = Array.from({ length: 1_000 }, () => limiter.allow('shard-a', 'a')).filter(Boolean).length;
    expect(allowed).toBe(3);
    expect(limiter.allow('shard-b', 'b')).toBe(true);
    expect(limiter.drain()).toEqual([{ key: 'shard-a', suppressed: 997, detail: 'a' }]);
    expect(limiter.drain()).toEqual([]);
    now = 1_000;
    expect(limiter.allow('shard-a', 'a')).toBe(true);
  });

  it('tracks a bounded number of keys', () => {
    const limiter = new LogLimiter<string>({ burst: 1, maxKeys: 2, now: () => 0 });
    for (const key of ['a', 'b', 'c', 'd', 'e']) limiter.allow(key, key);
    expect(limiter.drain()).toEqual([{ key: 'other', suppressed: 2, detail: 'e' }]);
  });
});

describe('upstream failure log', () => {
  it('writes a few lines and one count for a shard failing a thousand times', async () => {
    const output: string[] = [];
    const logger = createLogger('info', new Writable({ write: (chunk, _encoding, done) => (output.push(String(chunk)), done()) }));
    const metrics = createMetrics();
    const observer = createUpstreamObserver(logger, metrics, { burst: 5, windowMs: 60_000 });
    // A list call that fails like a client's would: one attempt reported, then the error.
    const failingCall = () => {
      const call = { tenantId: 't-1', list: 'shifts', pageSize: 100, signal: undefined };
      return observer.upstreamCall(call, async () => {
        observer.upstreamAttempt(call, { status: 503, durationMs: 3, origin: 'https://shard-9.example.com', outcome: 'http_status' });
        throw new UpstreamError('UPSTREAM_UNAVAILABLE', 'the upstream answered 503 for shifts', { status: 503 });
      });
    };
    const scope: RequestRecord = { requestId: 'req-1', startedAt: 0, aborted: false, upstreamCalls: 0, coalesced: 0 };
    await runInScope(scope, () => Promise.all(Array.from({ length: 1_000 }, () => failingCall().catch(() => undefined))));
    observer.close();

    const lines = output.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.filter((line) => line.event === 'upstream_call_failed')).toHaveLength(5);
    expect(lines.find((line) => line.event === 'upstream_call_failed')).toMatchObject({ requestId: 'req-1', origin: 'https://shard-9.example.com', cause: 'http_status', status: 503, attempts: 1 });
    expect(lines.filter((line) => line.event === 'upstream_call_failed_suppressed')).toEqual([
      expect.objectContaining({ origin: 'https://shard-9.example.com', list: 'shifts', cause: 'http_status', suppressed: 995 }),
    ]);
    expect(scope.upstreamCalls).toBe(1_000);
    const calls = await metrics.upstreamCalls.get();
    expect(calls.values).toEqual([expect.objectContaining({ labels: { list: 'shifts', origin: 'https://shard-9.example.com', outcome: 'http_status' }, value: 1_000 })]);
    metrics.close();
  });
});

describe('LogLimiter keys', () => {
  it('stays bounded under a flood of new keys, and forgets idle ones without waiting for a drain', () => {
    let now = 0;
    const limiter = new LogLimiter<string>({ burst: 1, windowMs: 1_000, maxKeys: 10, now: () => now });
    for (let i = 0; i < 10_000; i += 1) limiter.allow(`key-${i}`, 'x');
    expect(limiter.size).toBe(11);
    // Two windows later the first keys are idle: a new key gets its own line instead of sharing `other`.
    now = 2_000;
    expect([limiter.allow('fresh', 'fresh'), limiter.allow('fresh-2', 'fresh-2')]).toEqual([true, true]);
    expect(limiter.size).toBeLessThanOrEqual(11);
    expect(limiter.drain()).toEqual([{ key: 'other', suppressed: 9_989, detail: 'x' }]);
    now = 4_500;
    limiter.drain();
    expect(limiter.size).toBe(0);
  });
});
