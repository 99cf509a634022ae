import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ApolloServerPlugin } from '@apollo/server';
import { NO_OBSERVER, SCOPES, type Observer, type RequestRecord } from '../upstream/observer';
import { inlineTrace } from './inlineTrace';
import { logObserver } from './logObserver';
import type { Logger } from './logger';
import type { Metrics } from './metrics';
import { metricsObserver } from './metricsObserver';
import { operationRecorder, type OperationRecorder } from './operationPlugin';
import { startTracing } from './otel';
import { traceRequest, tracingObserver } from './otel/observer';
import { nameOperationSpan, operationSpanPlugin } from './otel/operationSpanPlugin';
import { requestRecordObserver, runInRequestScope, setTraceIdProvider } from './requestScope';
import { createUpstreamObserver } from './upstreamObserver';

export interface ObservabilityOptions {
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** Where token requests go, for their failure lines (a wrong WFS_AUTH_URL shows in the log; clients never see it). */
  readonly tokenUrl?: string;
  /** The OTEL_* variables to read (default: process.env). */
  readonly telemetryEnv?: Readonly<Record<string, string | undefined>>;
}

/** The observability layer of one server, built once at start-up. */
export interface Observability {
  /** What the client, the token cache and the data layer report to. */
  readonly observer: Observer;
  /** The Apollo Server plugins: the federated trace (`ftv1`) when asked; RED metrics, error codes and the debug line per operation; the operation's span name. */
  readonly plugins: ReadonlyArray<ApolloServerPlugin>;
  /** A query answered whole before Apollo Server runs (cache/answers.ts): counted and logged as the plugins count and log an executed one. */
  readonly answeredWhole: OperationRecorder['answeredWhole'];
  /**
   * Serves one GraphQL request inside its record (request id on every log line, abort
   * accounting, the in-flight gauge) and, with tracing on, its span; `handler` gets the
   * record for the request's GraphQL context.
   */
  serve(req: IncomingMessage, res: ServerResponse, handler: (record: RequestRecord) => Promise<void>): Promise<void>;
  /** Writes the counts of suppressed lines and sends the spans still buffered. */
  close(): Promise<void>;
}

/**
 * Builds the observer from the adapters in use: the request record, Prometheus
 * metrics, log lines, the upstream calls' failure lines and, when the standard
 * OTEL_* switch is set, OpenTelemetry spans (the SDK loads only then).
 */
export async function createObservability(options: ObservabilityOptions): Promise<Observability> {
  const { logger, metrics } = options;
  const tracing = await startTracing(options.telemetryEnv);
  // With tracing on, every log line written inside a span carries its trace id.
  if (tracing) setTraceIdProvider(() => tracing.traceId());
  const upstream = createUpstreamObserver(logger, metrics);
  const counted = metricsObserver(metrics, upstream.originLabel);
  const observer = composeObservers([
    requestRecordObserver(),
    counted,
    logObserver(logger, options.tokenUrl ?? 'unknown'),
    upstream,
    ...(tracing ? [tracingObserver(tracing)] : []),
  ]);
  const operations = operationRecorder(metrics, logger, upstream);
  return {
    observer,
    plugins: [inlineTrace(), operations.plugin, ...(tracing ? [operationSpanPlugin(tracing)] : [])],
    answeredWhole(record, operationName) {
      operations.answeredWhole(record, operationName);
      if (tracing) nameOperationSpan(tracing, 'query', operationName, true);
    },
    serve(req, res, handler) {
      metrics.graphqlInFlight.inc();
      const onEnd = (record: RequestRecord) => {
        metrics.graphqlInFlight.dec();
        counted.requestEnded(record);
      };
      return runInRequestScope(req, res, onEnd, (record) => (tracing ? traceRequest(tracing, req.headers, () => handler(record)) : handler(record)));
    },
    async close() {
      upstream.close();
      await tracing?.flush();
    },
  };
}

/**
 * One observer that tells every part: an event goes to each part that has it, in
 * order; a scope runs inside the scopes of the parts before it (the first part's is
 * outermost). A member no part has is the no-op one; one that one part has is that part's.
 */
export function composeObservers(parts: ReadonlyArray<Partial<Observer>>): Observer {
  const composed: Record<string, unknown> = {};
  for (const key of Object.keys(NO_OBSERVER) as Array<keyof Observer>) {
    const handlers = parts.flatMap((part) => (part[key] ? [(part[key] as (...args: unknown[]) => unknown).bind(part)] : []));
    if (handlers.length === 0) composed[key] = NO_OBSERVER[key];
    else if (handlers.length === 1) composed[key] = handlers[0];
    else if ((SCOPES as readonly string[]).includes(key)) {
      type Scope = (subject: unknown, run: () => Promise<unknown>) => Promise<unknown>;
      composed[key] = (handlers as Scope[]).reduceRight<Scope>((inner, outer) => (subject, run) => outer(subject, () => inner(subject, run)), (_subject, run) => run());
    } else {
      composed[key] = (...args: unknown[]) => {
        for (const handler of handlers) handler(...args);
      };
    }
  }
  return composed as unknown as Observer;
}
