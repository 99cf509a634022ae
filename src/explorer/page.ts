import type { ExplorerAssets } from './assets';

/** Where the page's scripts and stylesheets are served. */
export const ASSET_PREFIX = '/explorer/assets/';

/**
 * Only our own origin may provide scripts (Monaco's web workers too), stylesheets and
 * connections. GraphiQL needs no `unsafe-eval` and no inline scripts (its settings travel
 * in a JSON data block).
 * Fonts and a few icons are data: URIs inside graphiql.min.css.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  // Monaco (GraphiQL 5's editor) writes style attributes as HTML and its theme's colours
  // and icons into a <style> element it fills at run time (no nonce support), so inline
  // styles are allowed; scripts stay our own files only.
  "style-src 'self' 'unsafe-inline'",
  "font-src 'self' data:",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export interface PageSettings {
  graphqlPath: string;
  defaultQuery: string;
  defaultHeaders: Record<string, string>;
  title: string;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

/** JSON that is safe inside a `<script>` element: no `</script>`, no `<!--`. */
function jsonForScript(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');
}

export function renderPage(settings: PageSettings, assets: ExplorerAssets): string {
  const config = {
    graphqlPath: settings.graphqlPath,
    defaultQuery: settings.defaultQuery,
    defaultHeaders: Object.keys(settings.defaultHeaders).length > 0 ? JSON.stringify(settings.defaultHeaders, null, 2) : null,
    logo: settings.title,
    // Monaco's labels: `editorWorkerService` for the editor's own worker, `json`, `graphql`.
    workers: {
      editorWorker: ASSET_PREFIX + assets.editorWorker.name,
      json: ASSET_PREFIX + assets.jsonWorker.name,
      graphql: ASSET_PREFIX + assets.graphqlWorker.name,
    },
  };
  const url = (asset: { name: string }) => escapeHtml(ASSET_PREFIX + asset.name);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(settings.title)}</title>
<link rel="icon" type="image/svg+xml" href="${url(assets.favicon)}">
<link rel="stylesheet" href="${url(assets.graphiqlCss)}">
<link rel="stylesheet" href="${url(assets.theme)}">
</head>
<body class="graphiql-dark">
<div id="explorer"><noscript><p class="explorer-noscript">The explorer needs JavaScript. The GraphQL endpoint is ${escapeHtml(settings.graphqlPath)}.</p></noscript></div>
<script type="application/json" id="explorer-config">${jsonForScript(config)}</script>
<script src="${url(assets.bootstrap)}"></script>
</body>
</html>
`;
}
