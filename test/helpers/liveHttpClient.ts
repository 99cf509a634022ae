import { request } from 'undici';
import type { Received } from './liveClient';

/** The subgraph protocols over HTTP a test subscribes with: GraphQL over SSE, and Apollo's multipart subscriptions. */
export type HttpProtocol = 'sse' | 'multipart';

/** What the `Accept` header of each says (SSE as Hive Gateway's executor sends it; multipart as Apollo Client's HttpLink does). */
export const ACCEPT: Record<HttpProtocol, string> = {
  sse: 'text/event-stream',
  multipart: 'multipart/mixed;boundary="graphql";subscriptionSpec=1.0,application/json',
};

/** One HTTP subscription: what it received, its heartbeats, its answer's status and type. */
export interface HttpReceived<T = any> extends Received<T> {
  heartbeats: number;
  status: number;
  contentType: string;
  /** Resolves when the stream ended (completed, or closed by either side). */
  readonly ended: Promise<void>;
}

/**
 * POSTs a subscription with `protocol`'s Accept and reads the stream as it comes:
 * SSE events (`next` with its data, `complete`, comment lines as heartbeats) or
 * multipart parts (`{"payload": …}`, `{}` as a heartbeat, the closing boundary).
 * `unsubscribe` aborts the request, as a client that goes.
 */
export async function subscribeHttp<T = any>(url: string, protocol: HttpProtocol, query: string, headers: Record<string, string>, variables?: Record<string, unknown>): Promise<HttpReceived<T>> {
  const controller = new AbortController();
  const response = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: ACCEPT[protocol], ...headers },
    body: JSON.stringify({ query, ...(variables && { variables }) }),
    signal: controller.signal,
  });
  const received: Omit<HttpReceived<T>, 'ended'> & { ended?: Promise<void> } = {
    results: [],
    completed: false,
    heartbeats: 0,
    status: response.statusCode,
    contentType: String(response.headers['content-type'] ?? ''),
    unsubscribe: () => controller.abort(),
  };
  const take = protocol === 'sse' ? sseEvents : multipartParts;
  // Read to its end (or the abort) as it comes.
  const read = async () => {
    let buffer = '';
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body) buffer = take(buffer + decoder.decode(chunk as Buffer, { stream: true }), received as HttpReceived);
    } catch {
      // Aborted by `unsubscribe`, or closed by the server: the stream ended either way.
    }
  };
  received.ended = read();
  return received as HttpReceived<T>;
}

/** Takes the whole SSE events off `buffer` into `received`; what is left is the start of the next. */
function sseEvents(buffer: string, received: HttpReceived): string {
  for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
    const event = buffer.slice(0, end);
    buffer = buffer.slice(end + 2);
    if (event.startsWith(':')) {
      received.heartbeats += 1;
      continue;
    }
    const name = /^event: ?(.*)$/m.exec(event)?.[1];
    const data = /^data: ?(.*)$/m.exec(event)?.[1];
    if (name === 'next' && data) received.results.push(JSON.parse(data));
    if (name === 'complete') received.completed = true;
  }
  return buffer;
}

/** Takes the whole multipart parts off `buffer` into `received` (boundary `graphql`). */
function multipartParts(buffer: string, received: HttpReceived): string {
  const boundary = '\r\n--graphql';
  for (;;) {
    const start = buffer.indexOf(boundary);
    if (start === -1) return buffer;
    const rest = buffer.slice(start + boundary.length);
    if (rest.startsWith('--')) {
      received.completed = true;
      return '';
    }
    const next = rest.indexOf(boundary);
    if (next === -1) return buffer;
    const part = rest.slice(0, next);
    buffer = rest.slice(next);
    const body = part.slice(part.indexOf('\r\n\r\n') + 4);
    if (body.trim() === '') continue;
    const json = JSON.parse(body);
    if (Object.keys(json).length === 0) received.heartbeats += 1;
    else received.results.push(json.payload);
  }
}
