import { currentTraceId, traceEntityLookup, traceGraphQLRequest, traceListCall, traceTokenRequest, tracingEnabled } from '../../src/telemetry';

/** The switch of README, "Tracing (OpenTelemetry)", and the facade's pass-through when tracing is off. */
describe('telemetry facade', () => {
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

  it('runs instrumented blocks unchanged when off: same result, same error, no trace id', async () => {
    expect(await traceGraphQLRequest({ traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }, async () => currentTraceId())).toBeUndefined();
    expect(await traceListCall('shifts', 100, async () => 'page')).toBe('page');
    expect(await traceEntityLookup(3, async () => [1, 2, 3])).toEqual([1, 2, 3]);
    const failure = Object.assign(new Error('refused'), { code: 'UPSTREAM_UNAUTHORIZED' });
    await expect(traceTokenRequest('tenant-1', async () => Promise.reject(failure))).rejects.toBe(failure);
  });
});
