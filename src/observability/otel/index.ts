import type { Tracing } from './tracing';

/**
 * OpenTelemetry tracing, off unless the standard switch is in the environment
 * (docs/operations.md, "Tracing (OpenTelemetry)": `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_TRACES_EXPORTER`).
 * No `@opentelemetry/*` module is loaded until then: `./sdk` is required once, here.
 */

/** Whether the standard OpenTelemetry variables turn tracing on. */
export function tracingEnabled(env: Readonly<Record<string, string | undefined>>): boolean {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return false;
  const exporter = (env.OTEL_TRACES_EXPORTER ?? '').trim().toLowerCase();
  if (exporter === 'none') return false;
  return exporter !== '' || (env.OTEL_EXPORTER_OTLP_ENDPOINT ?? '').trim() !== '' || (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? '').trim() !== '';
}

/** The SDK registers itself as the process's tracer provider: one per process, shared by every server started in it. */
let started: Promise<Tracing> | undefined;

/** The process's tracing when the environment asks for it, else undefined. */
export async function startTracing(env: Readonly<Record<string, string | undefined>> = process.env): Promise<Tracing | undefined> {
  if (!tracingEnabled(env)) return started;
  // A CommonJS build: `require` here is the lazy load, done once, only on this path.
  started ??= Promise.resolve().then(() => (require('./sdk') as typeof import('./sdk')).createTracing(env));
  return started;
}
