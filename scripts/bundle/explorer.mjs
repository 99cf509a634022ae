// The explorer's browser files, built at `npm run build` into dist/explorer/assets/
// (scripts/bundle/build.mjs calls this), so that the running server reads them from
// dist/ and a production install needs no front-end package (React, GraphiQL and
// CodeMirror are devDependencies). `node scripts/bundle/explorer.mjs <dir>` builds them
// into another folder (the tests do).
//
// GraphiQL 3's UMD bundle expects React 18 and ReactDOM as globals: the page loads the
// three UMD files as their packages ship them, then our bootstrap (src/explorer/browser/,
// bundled here) mounts GraphiQL. Every file name carries a hash of its content, so the
// server can let browsers cache it for a year; manifest.json maps each role to its file.
import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const require_ = createRequire(import.meta.url);
const browserDir = join(root, 'src', 'explorer', 'browser');

export const DEFAULT_OUT_DIR = join(root, 'dist', 'explorer', 'assets');

/** A file of an installed package, found through its package.json (their `exports` maps hide the UMD builds). */
function packageFile(name, file) {
  return readFileSync(join(dirname(require_.resolve(`${name}/package.json`)), file));
}

async function bootstrapScript() {
  const result = await build({
    absWorkingDir: root,
    entryPoints: [join(browserDir, 'bootstrap.ts')],
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'browser',
    target: 'es2017',
    minify: true,
    legalComments: 'none',
    logLevel: 'warning',
  });
  return Buffer.from(result.outputFiles[0].contents);
}

/** Builds the files into `outDir` (emptied first) and returns the manifest. */
export async function buildExplorerAssets(outDir = DEFAULT_OUT_DIR) {
  const files = {
    react: ['react', '.production.min.js', packageFile('react', 'umd/react.production.min.js')],
    reactDom: ['react-dom', '.production.min.js', packageFile('react-dom', 'umd/react-dom.production.min.js')],
    graphiql: ['graphiql', '.min.js', packageFile('graphiql', 'graphiql.min.js')],
    graphiqlCss: ['graphiql', '.min.css', packageFile('graphiql', 'graphiql.min.css')],
    theme: ['explorer', '.css', readFileSync(join(browserDir, 'theme.css'))],
    bootstrap: ['explorer', '.js', await bootstrapScript()],
    favicon: ['favicon', '.svg', readFileSync(join(browserDir, 'favicon.svg'))],
  };
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const manifest = {};
  for (const [role, [baseName, extension, body]] of Object.entries(files)) {
    const hash = createHash('sha256').update(body).digest('hex').slice(0, 12);
    const name = `${baseName}.${hash}${extension}`;
    writeFileSync(join(outDir, name), body);
    manifest[role] = name;
  }
  writeFileSync(join(outDir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  return manifest;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const outDir = resolve(process.argv[2] ?? DEFAULT_OUT_DIR);
  await buildExplorerAssets(outDir);
  process.stdout.write(`explorer: ${outDir}\n`);
}
