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
import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const require_ = createRequire(import.meta.url);
const browserDir = join(root, 'src', 'explorer', 'browser');

export const DEFAULT_OUT_DIR = join(root, 'dist', 'explorer', 'assets');

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
  return Object.fromEntries(paths.map((path) => [path, existsSync(join(root, path)) ? sha256(readFileSync(join(root, path))) : null]));
}

/** Builds the files into `outDir` (emptied first) and returns the manifest. */
export async function buildExplorerAssets(outDir = DEFAULT_OUT_DIR) {
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
