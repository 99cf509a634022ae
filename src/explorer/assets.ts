import { existsSync, readFileSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';

const gzipAsync = promisify(gzip);

/**
 * One file the explorer page loads. Its name carries a hash of its content, so it can
 * be cached for a year (`immutable`) and still change the day a dependency is updated.
 */
export interface Asset {
  /** Path under the asset prefix, for example `explorer.3f2a9c1d0b4e.js`. */
  readonly name: string;
  readonly contentType: string;
  readonly body: Buffer;
  /** Gzipped body, compressed on first request and kept. */
  gzipped(): Promise<Buffer>;
}

/** The files the page names, by role; `scripts/bundle/explorer.mjs` writes them and their manifest. */
export const ASSET_ROLES = ['bootstrap', 'graphiqlCss', 'theme', 'favicon', 'editorWorker', 'jsonWorker', 'graphqlWorker'] as const;
export type ExplorerAssets = Record<(typeof ASSET_ROLES)[number], Asset>;

/**
 * Where `npm run build` puts the assets: `dist/explorer/assets/` at the package root,
 * found by walking up from this code (in `src/explorer/`, `dist/explorer/`, or the
 * bundle `dist/main.js`), so any working directory works.
 */
export const DEFAULT_ASSETS_DIR = join(packageRoot(__dirname), 'dist', 'explorer', 'assets');

function packageRoot(from: string): string {
  for (let dir = from, up = 0; up < 4; dir = dirname(dir), up++) {
    if (existsSync(join(dir, 'package.json'))) return dir;
  }
  return join(from, '..', '..');
}

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/**
 * Reads the built assets (our bootstrap bundled with React and GraphiQL, their
 * stylesheet, Monaco's web workers, our theme and icon). Built at `npm run build`, not read from
 * node_modules: a production install carries no front-end package.
 */
export function loadExplorerAssets(dir: string = DEFAULT_ASSETS_DIR): ExplorerAssets {
  let manifest: Record<string, unknown>;
  try {
    manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Record<string, unknown>;
  } catch {
    throw new Error(`the explorer's files are missing from ${dir}: run \`npm run build\``);
  }
  const assets: Partial<ExplorerAssets> = {};
  for (const role of ASSET_ROLES) {
    const name = manifest[role];
    if (typeof name !== 'string' || name.includes('/')) throw new Error(`${join(dir, 'manifest.json')} names no file for ${role}: run \`npm run build\``);
    assets[role] = asset(name, readFileSync(join(dir, name)));
  }
  return assets as ExplorerAssets;
}

function asset(name: string, body: Buffer): Asset {
  let compressed: Promise<Buffer> | undefined;
  return {
    name,
    contentType: CONTENT_TYPES[extname(name)] ?? 'application/octet-stream',
    body,
    gzipped: () => (compressed ??= gzipAsync(body, { level: 9 })),
  };
}
