import { composeObservers } from '../../src/observability';
import { NO_OBSERVER, type Observer } from '../../src/upstream/observer';
import { tracingEnabled } from '../../src/observability/otel';

/** The switch of docs/operations.md, "Tracing (OpenTelemetry)", and the observer's pass-through when nothing watches. */
describe('telemetry switch', () => {
  it('is on only with the standard OTEL_* switch', () => {
    expect(tracingEnabled({})).toBe(false);
    expect(tracingEnabled({ OTEL_SERVICE_NAME: 'wfs-subgraph' })).toBe(false);
    expect(tracingEnabled({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(true);
    expect(tracingEnabled({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })).toBe(true);
    expect(tracingEnabled({ OTEL_TRACES_EXPORTER: 'otlp' })).toBe(true);
    expect(tracingEnabled({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(false);
    expect(tracingEnabled({ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(false);
    expect(tracingEnabled({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' })).toBe(false);
  });
});

describe('observer', () => {
  const call = { tenantId: 'tenant-1', list: 'shifts', pageSize: 100, signal: undefined };

  it('runs scopes unchanged when nothing watches: same result, same error', async () => {
    expect(await NO_OBSERVER.upstreamCall(call, async () => 'page')).toBe('page');
    expect(await NO_OBSERVER.entityLookup(3, async () => [1, 2, 3])).toEqual([1, 2, 3]);
    const failure = Object.assign(new Error('refused'), { code: 'UPSTREAM_UNAUTHORIZED' });
    await expect(NO_OBSERVER.tokenRequest('tenant-1', async () => Promise.reject(failure))).rejects.toBe(failure);
  });

  it('tells every part of a composed observer: events in order, scopes nested with the first part outermost', async () => {
    const seen: string[] = [];
    const part = (name: string): Partial<Observer> => ({
      upstreamRetry: (list, reason) => void seen.push(`${name} retry ${list} ${reason}`),
      upstreamCall: async (_call, run) => {
        seen.push(`${name} in`);
        try {
          return await run();
        } finally {
          seen.push(`${name} out`);
        }
      },
    });
    const observer = composeObservers([part('a'), {}, part('b')]);
    observer.upstreamRetry('shifts', 'transient');
    expect(await observer.upstreamCall(call, async () => (seen.push('work'), 'page'))).toBe('page');
    expect(seen).toEqual(['a retry shifts transient', 'b retry shifts transient', 'a in', 'b in', 'work', 'b out', 'a out']);
    // A member no part has is the no-op one.
    expect(() => observer.bulkheadQueued()).not.toThrow();
  });
});
