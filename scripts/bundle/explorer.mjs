// The explorer's browser files, built at `npm run build` into dist/explorer/assets/
// (scripts/bundle/build.mjs calls this), so that the running server reads them from
// dist/ and a production install needs no front-end package (React, GraphiQL and
// CodeMirror are devDependencies). `node scripts/bundle/explorer.mjs <dir>` builds them
// into another folder (the tests do).
//
// React 19 and GraphiQL 5 ship no UMD files: esbuild bundles them with our bootstrap
// (src/explorer/browser/) into one script and one stylesheet (Monaco's and GraphiQL's
// CSS, its icon font inlined), and Monaco's three web workers (the editor's, JSON's for
// the variables and headers, GraphQL's) into a script each, which the bootstrap names
// to Monaco. Every file name carries a hash of its content, so the server can let
// browsers cache it for a year; manifest.json maps each role to its file. sources.json,
// written last, holds a hash of every file of ours the build read (and of
// package-lock.json, for the packages): the tests use the files `npm run build` made
// while these hashes still match (test/helpers/explorerAssets.ts) and build them again
// only when they do not.
//
// The last files built are also kept in node_modules/.cache/wfs-explorer-assets/ (with
// their sources.json), and a build whose sources all still hash the same copies them
// from there instead of bundling again: the same inputs make the same files, and the
// bundling is most of a build's CPU (5 of 8 CPU-seconds). Every checkout that links this
// node_modules shares them: a worktree, or the copy of the repository in which
// test/e2e/addResource.test.ts runs the docs' `npm run build`.
import { build } from 'esbuild';
import assetSources from './assetSources.cjs';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const { builtFromCurrentSources, sourceHash } = assetSources;
const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const require_ = createRequire(import.meta.url);
const browserDir = join(root, 'src', 'explorer', 'browser');

export const DEFAULT_OUT_DIR = join(root, 'dist', 'explorer', 'assets');
/** The last assets built, with the hashes of their sources. */
const CACHE_DIR = join(root, 'node_modules', '.cache', 'wfs-explorer-assets');

const WORKERS = {
  editorWorker: 'monaco-editor/esm/vs/editor/editor.worker.js',
  jsonWorker: 'monaco-editor/esm/vs/language/json/json.worker.js',
  graphqlWorker: 'monaco-graphql/esm/graphql.worker.js',
};

/** One esbuild bundle for the browser: its script, when it imports any its stylesheet, and the files of ours it read. */
async function browserBundle(entryPoint) {
  const result = await build({
    absWorkingDir: root,
    entryPoints: [entryPoint],
    bundle: true,
    write: false,
    outdir: 'explorer-out',
    format: 'iife',
    platform: 'browser',
    target: 'es2020',
    minify: true,
    legalComments: 'none',
    logLevel: 'warning',
    define: { 'process.env.NODE_ENV': '"production"' },
    loader: { '.ttf': 'dataurl', '.woff': 'dataurl', '.woff2': 'dataurl', '.svg': 'dataurl' },
    metafile: true,
  });
  const of = (extension) => result.outputFiles.find((file) => file.path.endsWith(extension));
  const ours = Object.keys(result.metafile.inputs).filter((input) => !input.split('/').includes('node_modules'));
  return { js: Buffer.from(of('.js').contents), css: of('.css') ? Buffer.from(of('.css').contents) : undefined, ours };
}

const sha256 = (body) => createHash('sha256').update(body).digest('hex');

/**
 * The hash of each file the assets are built from, by path from the package root: the
 * files of ours the bundles read, the theme and icon, this script, and package-lock.json
 * standing for the packages bundled from node_modules.
 */
function sourceHashes(bundled) {
  const paths = [...new Set([...bundled, 'src/explorer/browser/theme.css', 'src/explorer/browser/favicon.svg', 'scripts/bundle/explorer.mjs', 'package-lock.json'])].sort();
  return Object.fromEntries(paths.map((path) => [path, sourceHash(root, path)]));
}

/**
 * Builds the files into `outDir` (emptied first) and returns the manifest: copied from
 * CACHE_DIR when they were built there from the same sources, bundled otherwise (and
 * then kept there for the next build).
 */
export async function buildExplorerAssets(outDir = DEFAULT_OUT_DIR) {
  if (builtFromCurrentSources(CACHE_DIR, root)) {
    try {
      rmSync(outDir, { recursive: true, force: true });
      cpSync(CACHE_DIR, outDir, { recursive: true });
      if (builtFromCurrentSources(outDir, root)) return JSON.parse(readFileSync(join(outDir, 'manifest.json'), 'utf8'));
    } catch {
      // Replaced by another build while being copied: bundle them.
    }
  }
  const manifest = await bundleExplorerAssets(outDir);
  keep(outDir);
  return manifest;
}

/** Copies the assets just built in `outDir` to CACHE_DIR, in place of what it held (through a folder of its own, renamed: a reader never sees half of it). */
function keep(outDir) {
  const fresh = `${CACHE_DIR}.${process.pid}`;
  const stale = `${CACHE_DIR}.${process.pid}.old`;
  try {
    rmSync(fresh, { recursive: true, force: true });
    cpSync(outDir, fresh, { recursive: true });
    if (existsSync(CACHE_DIR)) renameSync(CACHE_DIR, stale);
    renameSync(fresh, CACHE_DIR);
  } catch {
    // Another build kept its own meanwhile; the next build uses either.
  } finally {
    rmSync(fresh, { recursive: true, force: true });
    rmSync(stale, { recursive: true, force: true });
  }
}

/** Bundles the files into `outDir` (emptied first) and returns the manifest. */
async function bundleExplorerAssets(outDir) {
  const app = await browserBundle(join(browserDir, 'bootstrap.ts'));
  const workers = await Promise.all(Object.values(WORKERS).map((entry) => browserBundle(require_.resolve(entry))));
  const sources = sourceHashes([app, ...workers].flatMap((bundle) => bundle.ours));
  const files = {
    bootstrap: ['explorer', '.js', app.js],
    graphiqlCss: ['graphiql', '.css', app.css],
    theme: ['explorer', '.css', readFileSync(join(browserDir, 'theme.css'))],
    favicon: ['favicon', '.svg', readFileSync(join(browserDir, 'favicon.svg'))],
    ...Object.fromEntries(Object.keys(WORKERS).map((role, i) => [role, [role.replace(/Worker$/, '.worker'), '.js', workers[i].js]])),
  };
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const manifest = {};
  for (const [role, [baseName, extension, body]] of Object.entries(files)) {
    const hash = sha256(body).slice(0, 12);
    const name = `${baseName}.${hash}${extension}`;
    writeFileSync(join(outDir, name), body);
    manifest[role] = name;
  }
  writeFileSync(join(outDir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  // Last: a folder with sources.json is complete.
  writeFileSync(join(outDir, 'sources.json'), `${JSON.stringify(sources, null, 2)}\n`);
  return manifest;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const outDir = resolve(process.argv[2] ?? DEFAULT_OUT_DIR);
  await buildExplorerAssets(outDir);
  process.stdout.write(`explorer: ${outDir}\n`);
}
