/**
 * The two small files of our own that the explorer page loads, kept as strings so that
 * `npm run build` ships them inside dist/ with no copy step. They run in the browser:
 * plain ES2017, no imports; React, ReactDOM and GraphiQL are globals by then.
 */

/**
 * Mounts GraphiQL. The page's settings come from a JSON data block (not an inline
 * script, so the Content-Security-Policy can forbid inline scripts).
 */
export const bootstrapScript = `(function () {
  'use strict';
  var config = JSON.parse(document.getElementById('explorer-config').textContent);

  // GraphiQL passes the headers editor's content as options.headers.
  function fetcher(params, options) {
    var headers = Object.assign(
      { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json' },
      (options && options.headers) || {}
    );
    return fetch(config.graphqlPath, {
      method: 'POST',
      headers: headers,
      body: JSON.stringify(params),
      credentials: 'same-origin'
    }).then(function (response) {
      return response.text().then(function (text) {
        try {
          return JSON.parse(text);
        } catch (error) {
          return { errors: [{ message: 'HTTP ' + response.status + ': ' + text.slice(0, 500) }] };
        }
      });
    });
  }

  var props = {
    fetcher: fetcher,
    defaultQuery: config.defaultQuery,
    shouldPersistHeaders: true,
    isHeadersEditorEnabled: true,
    defaultEditorToolsVisibility: config.defaultHeaders ? 'headers' : true,
    defaultTheme: 'dark'
  };
  if (config.defaultHeaders) props.defaultHeaders = config.defaultHeaders;

  var root = ReactDOM.createRoot(document.getElementById('explorer'));
  root.render(React.createElement(GraphiQL, props, React.createElement(GraphiQL.Logo, null, config.logo)));
})();
`;

/**
 * Full-window layout, and GraphQL Playground's deep navy as the dark theme's base
 * colour (GraphiQL's dark theme already has Playground's pink accent).
 */
export const themeStylesheet = `html, body { height: 100%; margin: 0; }
body { background: #172a3a; }
#explorer { height: 100vh; }
body.graphiql-dark .graphiql-container,
body.graphiql-dark .CodeMirror-info,
body.graphiql-dark .CodeMirror-lint-tooltip,
body.graphiql-dark .graphiql-dialog,
body.graphiql-dark .graphiql-dialog-overlay,
body.graphiql-dark .graphiql-tooltip,
body.graphiql-dark [data-radix-popper-content-wrapper] {
  --color-base: 207, 43%, 16%;
}
.graphiql-container .graphiql-logo { font-size: var(--font-size-body); white-space: nowrap; }
.explorer-noscript { font: 16px/1.5 system-ui, sans-serif; color: #e8eef2; padding: 2rem; }
`;

/** The tab icon: a pink hexagon with a node at each corner, in the spirit of the GraphQL logo. */
export const faviconSvg = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">
<rect width="32" height="32" rx="6" fill="#172a3a"/>
<g fill="none" stroke="#e535ab" stroke-width="1.6">
<polygon points="16,4 26.4,10 26.4,22 16,28 5.6,22 5.6,10"/>
<polygon points="16,4 26.4,22 5.6,22"/>
</g>
<g fill="#e535ab">
<circle cx="16" cy="4" r="2.4"/><circle cx="26.4" cy="10" r="2.4"/><circle cx="26.4" cy="22" r="2.4"/>
<circle cx="16" cy="28" r="2.4"/><circle cx="5.6" cy="22" r="2.4"/><circle cx="5.6" cy="10" r="2.4"/>
</g>
</svg>
`;
