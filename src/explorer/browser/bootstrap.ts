/**
 * Runs in the browser, bundled with React 19 and GraphiQL 5 by
 * scripts/bundle/explorer.mjs (one script, no module loader): mounts GraphiQL. Its
 * editors (Monaco) run their language services in web workers, built as files of
 * their own; the page's config names them. The page's settings come from a JSON data
 * block, not an inline script, so the Content-Security-Policy can forbid inline scripts.
 */
import 'graphiql/style.css';
import { GraphiQL } from 'graphiql';
import type { IntrospectionQuery } from 'graphql';
import { createElement } from 'react';
import { createRoot } from 'react-dom/client';
import { createClient } from 'graphql-ws';
import { clientFacingIntrospection } from '../clientSchema';
import { resolveOperation, type OperationRequest } from './operationName';

// The few browser globals used here (the project's tsconfig has no DOM types).
declare const document: { getElementById(id: string): { textContent: string | null } | null };
declare const location: { protocol: string; host: string };

interface PageConfig {
  graphqlPath: string;
  defaultQuery: string;
  defaultHeaders: string | null;
  logo: string;
  /** Monaco's worker scripts by label (`editorWorker`, `json`, `graphql`), as URLs of this origin. */
  workers: Record<string, string>;
}

interface GraphQLParams extends OperationRequest {
  variables?: Record<string, unknown> | null;
}

/** The name GraphiQL gives its schema introspection query here, so the fetcher knows which answer to filter. */
const INTROSPECTION_NAME = 'ExplorerSchema';

const config = JSON.parse(document.getElementById('explorer-config')?.textContent ?? '{}') as PageConfig;

// Monaco asks for a worker by label: our own files, so `script-src 'self'` covers them.
(globalThis as { MonacoEnvironment?: unknown }).MonacoEnvironment = {
  getWorkerUrl: (_moduleId: string, label: string) => config.workers[label] ?? config.workers['editorWorker'],
};

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

/**
 * GraphiQL passes the headers editor's content as options.headers. The operation name
 * it passes may be stale (the document was edited and run at once): resolveOperation
 * drops a name the document does not define, for both paths.
 */
function fetcher(params: GraphQLParams, options?: { headers?: Record<string, string> }): Promise<unknown> | AsyncIterable<unknown> {
  const resolved = resolveOperation(params);
  if (resolved.operationType === 'subscription') return subscribe(resolved.params, options?.headers);
  return query(resolved.params, options);
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

createRoot(document.getElementById('explorer') as never).render(
  createElement(GraphiQL, props as never, createElement(GraphiQL.Logo, null, config.logo)),
);
