import type { IncomingMessage, ServerResponse } from 'node:http';
import { loadExplorerAssets, type Asset } from './assets';
import { ASSET_PREFIX, CONTENT_SECURITY_POLICY, renderPage } from './page';

export interface ExplorerOptions {
  /** Where the page sends operations, for example `/graphql`. */
  graphqlPath: string;
  /** The operation a new tab starts with. */
  defaultQuery: string;
  /** Pre-filled in the headers editor (demo mode: the tenant header with a demo tenant). */
  defaultHeaders: Record<string, string>;
  /** Page title and the name in the explorer's corner. */
  title?: string;
  /** Where the built assets are (default `dist/explorer/assets/`, from `npm run build`). */
  assetsDir?: string;
}

const DEFAULT_TITLE = 'Workforce scheduling subgraph — explorer';

/** A year, and never revalidated: asset URLs change with their content. */
const ASSET_CACHE_CONTROL = 'public, max-age=31536000, immutable';

const COMMON_HEADERS = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-resource-policy': 'same-origin',
} as const;

/**
 * Returns a request handler that serves GET / (the page) and GET /explorer/assets/*;
 * it returns false for anything else so the caller can route on.
 *
 * The explorer is GraphiQL 5 with React 19, all served from this process, so it works
 * on a network with no internet access. The assets are built at `npm run build`
 * (scripts/bundle/explorer.mjs) and read on the first request for the page or an
 * asset, not at start-up (they are megabytes, and most processes never serve them),
 * then kept. Without them (a build that skipped that step) the page answers 500.
 */
export function createExplorer(options: ExplorerOptions): (req: IncomingMessage, res: ServerResponse) => boolean {
  let loaded: { byName: Map<string, Asset>; page: Buffer } | undefined;
  const load = () => {
    if (loaded) return loaded;
    const assets = loadExplorerAssets(options.assetsDir);
    const page = renderPage(
      {
        graphqlPath: options.graphqlPath,
        defaultQuery: options.defaultQuery,
        defaultHeaders: options.defaultHeaders,
        title: options.title ?? DEFAULT_TITLE,
      },
      assets,
    );
    loaded = { byName: new Map<string, Asset>(Object.values(assets).map((asset) => [asset.name, asset])), page: Buffer.from(page) };
    return loaded;
  };

  return (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (path !== '/' && !path.startsWith(ASSET_PREFIX)) return false;
    let assets: ReturnType<typeof load>;
    try {
      assets = load();
    } catch {
      res.writeHead(500, { ...COMMON_HEADERS, 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : "the explorer's files are missing from this build (npm run build makes them)\n");
      return true;
    }
    if (path === '/') {
      const { page } = assets;
      res.writeHead(200, {
        ...COMMON_HEADERS,
        'content-type': 'text/html; charset=utf-8',
        'content-length': page.length,
        'content-security-policy': CONTENT_SECURITY_POLICY,
        'x-frame-options': 'DENY',
        // The page carries the default headers; always fetch it fresh.
        'cache-control': 'no-store',
      });
      res.end(req.method === 'HEAD' ? undefined : page);
      return true;
    }
    const asset = assets.byName.get(path.slice(ASSET_PREFIX.length));
    if (!asset) {
      res.writeHead(404, { ...COMMON_HEADERS, 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : 'no such explorer asset\n');
      return true;
    }
    void sendAsset(req, res, asset);
    return true;
  };
}

async function sendAsset(req: IncomingMessage, res: ServerResponse, asset: Asset): Promise<void> {
  const acceptsGzip = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
  let body = asset.body;
  if (acceptsGzip) {
    try {
      body = await asset.gzipped();
    } catch {
      body = asset.body; // compression is an optimisation; serve the file as it is
    }
  }
  if (res.destroyed) return;
  res.writeHead(200, {
    ...COMMON_HEADERS,
    'content-type': asset.contentType,
    'content-length': body.length,
    'cache-control': ASSET_CACHE_CONTROL,
    vary: 'accept-encoding',
    ...(body !== asset.body && { 'content-encoding': 'gzip' }),
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}
