import type { IncomingHttpHeaders } from 'node:http';

/** Attribute values we record: strings, numbers and booleans only. */
export type SpanAttributes = Record<string, string | number | boolean>;

/** What an instrumented block may say about its own span. */
export interface SpanHandle {
  set(attributes: SpanAttributes): void;
}

/** What `./sdk` provides when tracing is on; the observer in `./observer` is built on it. */
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
