import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A span as OTLP/HTTP JSON carries it (the fields the tests read). */
export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: Array<{ key: string; value: Record<string, unknown> }>;
}

/**
 * A real OTLP/HTTP traces receiver on loopback: a plain HTTP server taking the JSON
 * that `@opentelemetry/exporter-trace-otlp-http` posts to `/v1/traces`.
 */
export interface OtlpReceiver {
  /** The base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT` takes it. */
  readonly url: string;
  readonly spans: OtlpSpan[];
  /** `service.name` of every batch received. */
  readonly services: string[];
  /** Resolves once `predicate` holds over the spans received so far (checked on each batch). */
  until(predicate: (spans: OtlpSpan[]) => boolean): Promise<void>;
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: OtlpSpan[] = [];
  const services: string[] = [];
  const waiters = new Set<() => void>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces' || !String(req.headers['content-type']).includes('json')) {
        res.writeHead(415).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans: Array<{ resource: { attributes: OtlpSpan['attributes'] }; scopeSpans: Array<{ spans: OtlpSpan[] }> }>;
      };
      for (const resourceSpans of body.resourceSpans) {
        const name = resourceSpans.resource.attributes?.find((attribute) => attribute.key === 'service.name')?.value['stringValue'];
        if (typeof name === 'string') services.push(name);
        for (const scope of resourceSpans.scopeSpans) spans.push(...scope.spans);
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      for (const wake of [...waiters]) wake();
    });
  });
  server.keepAliveTimeout = 500;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    services,
    until: (predicate) =>
      new Promise<void>((resolve) => {
        const check = () => {
          if (!predicate(spans)) return;
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
        check();
      }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A span's attributes as a plain object (`{ key: value }`). */
export function spanAttributes(span: OtlpSpan): Record<string, unknown> {
  return Object.fromEntries((span.attributes ?? []).map(({ key, value }) => [key, Object.values(value)[0]]));
}
