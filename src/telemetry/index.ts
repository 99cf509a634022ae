import type { IncomingHttpHeaders } from 'node:http';

/**
 * Tracing facade. Everything the rest of the code calls lives here and costs one
 * function call when tracing is off (the default): no `@opentelemetry/*` module is
 * loaded until `startTelemetry` finds the standard switch in the environment
 * (README, "Tracing (OpenTelemetry)": `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_TRACES_EXPORTER`),
 * and then `./otel` is imported once and installs itself as the implementation.
 *
 * Attribute values are chosen by the callers below and never include a token,
 * client secret, cursor or header value: only names, ids, origins, codes and counts.
 */

/** Attribute values we record: strings, numbers and booleans only. */
export type SpanAttributes = Record<string, string | number | boolean>;

/** What an instrumented block may say about its own span. */
export interface SpanHandle {
  set(attributes: SpanAttributes): void;
}

/** The implementation `./otel` provides when tracing is on. */
export interface Tracing {
  /** Runs `run` inside a new span that is a child of the active one (or of the incoming `traceparent`). */
  inSpan<T>(name: string, attributes: SpanAttributes, run: (span: SpanHandle) => Promise<T>, parentHeaders?: IncomingHttpHeaders): Promise<T>;
  /** Adds attributes to the innermost active span, if any. */
  annotate(attributes: SpanAttributes): void;
  /** Renames the active span (the operation span, once the operation is known). */
  rename(name: string): void;
  /** Counts an HTTP attempt of the active list call and records its status. */
  noteAttempt(status: number): void;
  traceId(): string | undefined;
  flush(): Promise<void>;
}

let tracing: Tracing | undefined;
let starting: Promise<Tracing | undefined> | undefined;

/** Whether tracing is on in this process (it was started and found its switch). */
export function tracingActive(): boolean {
  return tracing !== undefined;
}

/** Whether the standard OpenTelemetry variables turn tracing on. */
export function tracingEnabled(env: Readonly<Record<string, string | undefined>>): boolean {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return false;
  const exporter = (env.OTEL_TRACES_EXPORTER ?? '').trim().toLowerCase();
  if (exporter === 'none') return false;
  return exporter !== '' || (env.OTEL_EXPORTER_OTLP_ENDPOINT ?? '').trim() !== '' || (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? '').trim() !== '';
}

/**
 * Turns tracing on when the environment asks for it (once per process; later calls
 * share the first). Returns whether it is on.
 */
export async function startTelemetry(env: Readonly<Record<string, string | undefined>> = process.env): Promise<boolean> {
  if (!tracingEnabled(env)) return tracing !== undefined;
  // A CommonJS build: `require` here is the lazy load, done once, only on this path.
  starting ??= Promise.resolve().then(() => (tracing = (require('./otel') as typeof import('./otel')).createTracing(env)));
  return (await starting) !== undefined;
}

/** Sends the spans still buffered (on shutdown, and in tests). */
export async function flushTelemetry(): Promise<void> {
  await tracing?.flush();
}

/** The trace id of the active span, for log lines; undefined when tracing is off or no span is active. */
export function currentTraceId(): string | undefined {
  return tracing?.traceId();
}

/** The GraphQL request, continuing the caller's (the router's) `traceparent`. Named by `operationSpanPlugin` once parsed. */
export function traceGraphQLRequest<T>(headers: IncomingHttpHeaders, run: () => Promise<T>): Promise<T> {
  return tracing ? tracing.inSpan('graphql.request', {}, run, headers) : run();
}

/** One upstream list call, retries included; `noteListAttempt` and `noteShard` fill in what the call learns. */
export function traceListCall<T>(list: string, pageSize: number, run: () => Promise<T>): Promise<T> {
  return tracing ? tracing.inSpan(`upstream.list ${list}`, { 'wfs.list': list, 'wfs.page_size': pageSize, 'wfs.retries': 0, 'wfs.coalesced': false }, run) : run();
}

/** An HTTP attempt of the active list call ended with `status` (0: network error); more than one attempt means retries. */
export function noteListAttempt(status: number): void {
  tracing?.noteAttempt(status);
}

/** The shard (the `api_base` origin) the active list call goes to. Origin only: never a path, query or token. */
export function noteShard(apiBase: string): void {
  if (!tracing) return;
  let origin: string;
  try {
    origin = new URL(apiBase).origin;
  } catch {
    return;
  }
  tracing.annotate({ 'wfs.shard.origin': origin });
}

/** The active list call shares another request's call in flight (the coalescer calls this for a follower). */
export function noteCoalesced(): void {
  tracing?.annotate({ 'wfs.coalesced': true });
}

/** One token request for a tenant; the outcome is `ok` or the error code. */
export function traceTokenRequest<T>(tenantId: string, run: () => Promise<T>): Promise<T> {
  if (!tracing) return run();
  return tracing.inSpan('upstream.token', { 'wfs.tenant': tenantId }, async (span) => {
    try {
      const result = await run();
      span.set({ 'wfs.outcome': 'ok' });
      return result;
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code;
      span.set({ 'wfs.outcome': typeof code === 'string' ? code : 'error' });
      throw error;
    }
  });
}

/** A lookup by id in a tenant's entity index; `noteEntityIndex` says whether it was answered from memory. */
export function traceEntityLookup<T>(ids: number, run: () => Promise<T>): Promise<T> {
  return tracing ? tracing.inSpan('entity_index.lookup', { 'wfs.entity_index.ids': ids }, run) : run();
}

/** `hit`: every id was in the index; `scan`: list pages had to be read. */
export function noteEntityIndex(result: 'hit' | 'scan'): void {
  tracing?.annotate({ 'wfs.entity_index.result': result });
}

/** Names the request span after the operation (`query Rota`), with its name and type as attributes. */
export function noteOperation(type: string, name: string | undefined): void {
  if (!tracing) return;
  tracing.rename(name ? `${type} ${name}` : type);
  tracing.annotate({ 'graphql.operation.type': type, 'graphql.operation.name': name ?? '' });
}
