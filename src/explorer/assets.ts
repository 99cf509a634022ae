import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { bootstrapScript, faviconSvg, themeStylesheet } from './browser';

const gzipAsync = promisify(gzip);

/**
 * One file the explorer page loads. Its URL carries a hash of its content, so it can
 * be cached for a year (`immutable`) and still change the day a dependency is updated.
 */
export interface Asset {
  /** Path under the asset prefix, for example `graphiql.3f2a9c1d.min.js`. */
  readonly name: string;
  readonly contentType: string;
  readonly body: Buffer;
  /** Gzipped body, compressed on first request and kept. */
  gzipped(): Promise<Buffer>;
}

/**
 * Files of installed packages, resolved through each package's package.json, not the
 * working directory. (Their `exports` maps hide the UMD builds from require.resolve.)
 */
function packageFile(packageName: string, file: string): Buffer {
  const packageDir = path.dirname(require.resolve(`${packageName}/package.json`));
  return readFileSync(path.join(packageDir, file));
}

function asset(baseName: string, extension: string, contentType: string, body: Buffer): Asset {
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 12);
  let compressed: Promise<Buffer> | undefined;
  return {
    name: `${baseName}.${hash}${extension}`,
    contentType,
    body,
    gzipped: () => (compressed ??= gzipAsync(body, { level: 9 })),
  };
}

const javascript = 'text/javascript; charset=utf-8';
const css = 'text/css; charset=utf-8';

/**
 * GraphiQL 3's UMD bundle expects React 18 and ReactDOM as globals, so the page loads
 * them first; the bootstrap script then mounts GraphiQL. Everything is served by the
 * subgraph itself: the explorer works with no internet access.
 */
export function loadExplorerAssets() {
  return {
    react: asset('react', '.production.min.js', javascript, packageFile('react', 'umd/react.production.min.js')),
    reactDom: asset('react-dom', '.production.min.js', javascript, packageFile('react-dom', 'umd/react-dom.production.min.js')),
    graphiql: asset('graphiql', '.min.js', javascript, packageFile('graphiql', 'graphiql.min.js')),
    graphiqlCss: asset('graphiql', '.min.css', css, packageFile('graphiql', 'graphiql.min.css')),
    theme: asset('explorer', '.css', css, Buffer.from(themeStylesheet)),
    bootstrap: asset('explorer', '.js', javascript, Buffer.from(bootstrapScript)),
    favicon: asset('favicon', '.svg', 'image/svg+xml', Buffer.from(faviconSvg)),
  } as const;
}

export type ExplorerAssets = ReturnType<typeof loadExplorerAssets>;
