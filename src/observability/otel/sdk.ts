import type { IncomingHttpHeaders } from 'node:http';
import { context, propagation, ROOT_CONTEXT, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, ConsoleSpanExporter, NodeTracerProvider, type SpanExporter } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { SpanAttributes, SpanHandle, Tracing } from './tracing';

/**
 * The OpenTelemetry SDK behind `./tracing`'s interface, imported (by `./index`) only when tracing is
 * on. The SDK reads the standard variables it knows itself (`OTEL_TRACES_SAMPLER`,
 * `OTEL_TRACES_SAMPLER_ARG`, `OTEL_BSP_*`, `OTEL_EXPORTER_OTLP_HEADERS`,
 * `OTEL_EXPORTER_OTLP_TIMEOUT`, `OTEL_RESOURCE_ATTRIBUTES`); here we choose the
 * exporter, the endpoint and the service name.
 *
 * The router's `traceparent` is continued with W3C trace-context propagation, and
 * spans live in AsyncLocalStorage (NodeTracerProvider's context manager), so the
 * spans started deep in the upstream client find the request's span as parent.
 */

type Env = Readonly<Record<string, string | undefined>>;

const TRACER_NAME = 'wfs-subgraph';

/** An HTTP attempt count per list-call span (the span object is the key; gone with it). */
const attemptsBySpan = new WeakMap<Span, number>();

export function createTracing(env: Env): Tracing {
  const provider = new NodeTracerProvider({
    resource: defaultResource()
      .merge(detectResources({ detectors: [envDetector] }))
      .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: env.OTEL_SERVICE_NAME?.trim() || 'wfs-subgraph' })),
    spanProcessors: [new BatchSpanProcessor(exporterFor(env))],
  });
  provider.register({ propagator: new W3CTraceContextPropagator() });
  const tracer = provider.getTracer(TRACER_NAME);

  return {
    inSpan<T>(name: string, attributes: SpanAttributes, run: (span: SpanHandle) => Promise<T>, parentHeaders?: IncomingHttpHeaders): Promise<T> {
      const parent = parentHeaders ? propagation.extract(ROOT_CONTEXT, parentHeaders) : context.active();
      return tracer.startActiveSpan(name, { attributes }, parent, async (span) => {
        try {
          return await run({ set: (more) => span.setAttributes(more) });
        } catch (error) {
          const code = (error as { code?: unknown; extensions?: { code?: unknown } } | null)?.code;
          // The error code only: messages may quote upstream text.
          span.setStatus({ code: SpanStatusCode.ERROR, ...(typeof code === 'string' && { message: code }) });
          throw error;
        } finally {
          span.end();
        }
      });
    },
    annotate(attributes) {
      trace.getActiveSpan()?.setAttributes(attributes);
    },
    rename(name) {
      trace.getActiveSpan()?.updateName(name);
    },
    noteAttempt(status) {
      const span = trace.getActiveSpan();
      if (!span) return;
      const attempts = (attemptsBySpan.get(span) ?? 0) + 1;
      attemptsBySpan.set(span, attempts);
      span.setAttributes({ 'http.response.status_code': status, 'wfs.retries': attempts - 1 });
    },
    traceId() {
      const span = trace.getActiveSpan();
      return span?.isRecording() ? span.spanContext().traceId : undefined;
    },
    flush: () => provider.forceFlush(),
  };
}

/** `OTEL_TRACES_EXPORTER`: `otlp` (the default: OTLP over HTTP, JSON) or `console`. */
function exporterFor(env: Env): SpanExporter {
  const kind = (env.OTEL_TRACES_EXPORTER ?? 'otlp').split(',')[0]!.trim().toLowerCase() || 'otlp';
  if (kind === 'console') return new ConsoleSpanExporter();
  if (kind !== 'otlp') throw new Error(`OTEL_TRACES_EXPORTER: "${kind}" is not supported here (use otlp, console or none)`);
  // OTLP over HTTP with JSON bodies, which collectors take on the same port as protobuf.
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? '').trim();
  if (protocol === 'grpc') throw new Error('OTEL_EXPORTER_OTLP_PROTOCOL: grpc is not supported here; use the collector\'s OTLP/HTTP port (4318)');
  const url = tracesUrl(env);
  return new OTLPTraceExporter(url ? { url } : {});
}

/** The OTLP/HTTP traces URL: the signal-specific variable as is, else the base endpoint plus `/v1/traces`. */
function tracesUrl(env: Env): string | undefined {
  const specific = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (specific) return specific;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  return base ? `${base.replace(/\/+$/, '')}/v1/traces` : undefined;
}
