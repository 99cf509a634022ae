/**
 * Runs in the browser, bundled by scripts/bundle/explorer.mjs (ES2017, no module
 * loader): mounts GraphiQL. React, ReactDOM and GraphiQL are globals by then (their
 * UMD files load first). The page's settings come from a JSON data block, not an
 * inline script, so the Content-Security-Policy can forbid inline scripts.
 */
import type { IntrospectionQuery } from 'graphql';
import { createClient } from 'graphql-ws';
import { clientFacingIntrospection } from '../clientSchema';

// The few browser globals used here (the project's tsconfig has no DOM types).
declare const document: { getElementById(id: string): { textContent: string | null } | null };
declare const location: { protocol: string; host: string };
declare const React: { createElement(type: unknown, props: unknown, ...children: unknown[]): unknown };
declare const ReactDOM: { createRoot(container: unknown): { render(element: unknown): void } };
declare const GraphiQL: { Logo: unknown };

interface PageConfig {
  graphqlPath: string;
  defaultQuery: string;
  defaultHeaders: string | null;
  logo: string;
}

interface GraphQLParams {
  query: string;
  operationName?: string | null;
  variables?: Record<string, unknown> | null;
}

/** The name GraphiQL gives its schema introspection query here, so the fetcher knows which answer to filter. */
const INTROSPECTION_NAME = 'ExplorerSchema';

const config = JSON.parse(document.getElementById('explorer-config')?.textContent ?? '{}') as PageConfig;

/**
 * Whether the operation GraphiQL runs is a subscription (the named one, else the
 * document's first): a look at the text is enough here, and keeps graphql-js out of
 * the page.
 */
function isSubscription(params: GraphQLParams): boolean {
  const text = params.query.replace(/#[^\n]*/g, '');
  const name = params.operationName;
  if (name) return new RegExp(`\\bsubscription\\s+${name.replace(/[^_A-Za-z0-9]/g, '')}\\b`).test(text);
  return /^\s*subscription\b/.test(text);
}

/**
 * A subscription runs over graphql-ws at the same path (wss: under https), the headers
 * editor's content sent in `connection_init` (a browser's WebSocket cannot set
 * headers): one connection per run, closed when GraphiQL stops it.
 */
function subscribe(params: GraphQLParams, headers: Record<string, string> = {}): AsyncIterable<unknown> {
  const client = createClient({
    url: `${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}${config.graphqlPath}`,
    connectionParams: { headers },
    retryAttempts: 0,
  });
  const iterator = client.iterate({ query: params.query, ...(params.operationName && { operationName: params.operationName }), ...(params.variables && { variables: params.variables }) });
  return {
    [Symbol.asyncIterator]: () => ({
      next: () => iterator.next(),
      return: async () => {
        const ended = await iterator.return?.();
        void client.dispose();
        return ended ?? { value: undefined, done: true };
      },
    }),
  };
}

// GraphiQL passes the headers editor's content as options.headers.
function fetcher(params: GraphQLParams, options?: { headers?: Record<string, string> }): Promise<unknown> | AsyncIterable<unknown> {
  if (isSubscription(params)) return subscribe(params, options?.headers);
  return query(params, options);
}

async function query(params: GraphQLParams, options?: { headers?: Record<string, string> }): Promise<unknown> {
  const response = await fetch(config.graphqlPath, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/graphql-response+json, application/json',
      ...options?.headers,
    },
    body: JSON.stringify(params),
    credentials: 'same-origin',
  });
  const text = await response.text();
  let result: { data?: unknown };
  try {
    result = JSON.parse(text) as { data?: unknown };
  } catch {
    return { errors: [{ message: `HTTP ${response.status}: ${text.slice(0, 500)}` }] };
  }
  const data = result.data as IntrospectionQuery | null | undefined;
  if (params.operationName === INTROSPECTION_NAME && data?.__schema) {
    return { ...result, data: clientFacingIntrospection(data) };
  }
  return result;
}

const props: Record<string, unknown> = {
  fetcher,
  introspectionQueryName: INTROSPECTION_NAME,
  defaultQuery: config.defaultQuery,
  shouldPersistHeaders: true,
  isHeadersEditorEnabled: true,
  defaultEditorToolsVisibility: config.defaultHeaders ? 'headers' : true,
  defaultTheme: 'dark',
};
if (config.defaultHeaders) props['defaultHeaders'] = config.defaultHeaders;

ReactDOM.createRoot(document.getElementById('explorer')).render(
  React.createElement(GraphiQL, props, React.createElement(GraphiQL.Logo, null, config.logo)),
);
