import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';

/** What one subscription received so far: its `next` payloads, its errors, whether it completed. */
export interface Received<T = any> {
  readonly results: Array<{ data?: T | null; errors?: Array<{ message: string; extensions?: { code?: string; [key: string]: unknown } }> }>;
  error?: unknown;
  completed: boolean;
  unsubscribe(): void;
}

/** The GraphQL URL as a WebSocket URL. */
export function wsUrl(graphqlUrl: string): string {
  return graphqlUrl.replace(/^http/, 'ws');
}

/**
 * A graphql-ws client (the library Apollo Client's and urql's WebSocket links use) on
 * the `ws` package, identity in the `connection_init` payload's `headers` unless
 * `upgradeHeaders` are given. Lazy off: it connects at once; no retries.
 */
export function liveClient(graphqlUrl: string, initHeaders: Record<string, string> = {}, upgradeHeaders?: Record<string, string>): Client {
  return createClient({
    url: wsUrl(graphqlUrl),
    webSocketImpl: upgradeHeaders
      ? class extends WebSocket {
          constructor(address: string, protocols?: string | string[]) {
            super(address, protocols, { headers: upgradeHeaders });
          }
        }
      : WebSocket,
    connectionParams: { headers: initHeaders },
    lazy: true,
    retryAttempts: 0,
    shouldRetry: () => false,
  });
}

/** Subscribes and collects what arrives. */
export function collect<T = any>(client: Client, query: string, variables?: Record<string, unknown>): Received<T> {
  const received: Received<T> = { results: [], completed: false, unsubscribe: () => undefined };
  received.unsubscribe = client.subscribe<T>(
    { query, ...(variables && { variables }) },
    {
      next: (value) => void received.results.push(value as Received<T>['results'][number]),
      error: (error) => {
        received.error = error;
      },
      complete: () => {
        received.completed = true;
      },
    },
  );
  return received;
}

/** One hour later, in the same ISO 8601 form (a real edit a manager makes). */
export function hourLater(iso: string): string {
  const [, date, hour, rest] = /^(.*T)(\d\d)(.*)$/.exec(iso)!;
  return `${date}${String((Number(hour) + 1) % 24).padStart(2, '0')}${rest}`;
}
