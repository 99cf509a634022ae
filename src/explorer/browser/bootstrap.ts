/**
 * Runs in the browser, bundled by scripts/bundle/explorer.mjs (ES2017, no module
 * loader): mounts GraphiQL. React, ReactDOM and GraphiQL are globals by then (their
 * UMD files load first). The page's settings come from a JSON data block, not an
 * inline script, so the Content-Security-Policy can forbid inline scripts.
 */
import type { IntrospectionQuery } from 'graphql';
import { clientFacingIntrospection } from '../clientSchema';

// The few browser globals used here (the project's tsconfig has no DOM types).
declare const document: { getElementById(id: string): { textContent: string | null } | null };
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
  operationName?: string | null;
}

/** The name GraphiQL gives its schema introspection query here, so the fetcher knows which answer to filter. */
const INTROSPECTION_NAME = 'ExplorerSchema';

const config = JSON.parse(document.getElementById('explorer-config')?.textContent ?? '{}') as PageConfig;

// GraphiQL passes the headers editor's content as options.headers.
async function fetcher(params: GraphQLParams, options?: { headers?: Record<string, string> }): Promise<unknown> {
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
