// `npm run build`: src/ compiled to dist/, file by file, then the production server as
// one file, then the emulator of tools/emulator/ into dist/emulator/.
//
// Compiling is esbuild's, not tsc's: the TypeScript of src/ (but what tsconfig.build.json
// excludes) becomes CommonJS in dist/, one file each with its source map. Type checking
// is `npm run typecheck`'s, which the test line runs beside the build: tsc emitting
// dist/ (before esbuild) checked every type a second time, most of a build's 11 CPU-seconds, and the
// emitted files only served what the bundle leaves out (the benchmarks and tools that
// import single modules). esbuild compiles each file on its own, as the
// `isolatedModules` setting of the tests' transform requires every file can be
// (test/helpers/tsJestShared.js), so no file needs another's types to compile.
//
// The bundle then replaces dist/main.js (the server that dist/index.js starts) with one
// file of it and of the packages it loads. A start then reads and compiles one file instead of resolving,
// reading and wrapping some 600 modules in node_modules, which was most of a cold start
// (bench/README.md, "Cold start"). The demo and the emulator it runs on (tools/emulator/)
// are in it, run only in demo mode (src/main.ts loads the demo then). Everything else in
// dist/ stays single files (for the benchmarks and tools that import single modules).
//
// Left out of the bundle, loaded from node_modules when used: the packages only some
// deployments load, and only when configured (Redis, the OpenTelemetry SDK, the
// protobufjs messages of a gateway's query plan trace). Each must be one of our own dependencies, so that a
// production install (`npm ci --omit=dev`) puts it where the bundle looks: the build
// checks that. Three packages are replaced by files of this folder (`undici.cjs`,
// `createhash.cjs`, `fastJsonStringify.cjs`; each says why). The explorer's browser files (React, GraphiQL, our
// bootstrap) are built next, into dist/explorer/assets/ (explorer.mjs), so no
// front-end package is needed at run time.
import { build } from 'esbuild';
import { buildExplorerAssets } from './explorer.mjs';
import { createRequire } from 'node:module';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const require_ = createRequire(import.meta.url);
const root = join(here, '..', '..');

const EXTERNAL = [
  'ioredis',
  '@opentelemetry/sdk-trace-node',
  '@opentelemetry/exporter-trace-otlp-http',
  '@opentelemetry/resources',
  '@opentelemetry/core',
  '@opentelemetry/semantic-conventions',
  // protobufjs messages, for a gateway's query plan in a trace: never in a subgraph.
  '@apollo/usage-reporting-protobuf',
];

const { dependencies } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const notOurs = EXTERNAL.filter((name) => !(name in dependencies));
if (notOurs.length > 0) {
  throw new Error(`${notOurs.join(', ')}: left outside the bundle but not in package.json "dependencies", so a production install may nest it where dist/main.js does not look`);
}

/** Packages the bundle takes from a file of this folder instead of their own entry point. */
const REPLACED = { undici: 'undici.cjs', '@apollo/utils.createhash': 'createhash.cjs', 'fast-json-stringify': 'fastJsonStringify.cjs' };

/**
 * The packages of REPLACED resolve to their file of this folder. `undici.cjs` offers
 * the parts of undici the server uses: a name the server imports from undici that the
 * file does not offer stops the build here instead of being undefined at run time.
 */
const replacedPackages = {
  name: 'replaced-packages',
  setup(builder) {
    const filter = new RegExp(`^(${Object.keys(REPLACED).map((name) => name.replace(/[.\/]/g, '\\$&')).join('|')})$`);
    builder.onResolve({ filter }, ({ path }) => ({ path: join(here, REPLACED[path]) }));
    const offered = new Set(Object.keys(require_(join(here, REPLACED.undici))));
    builder.onLoad({ filter: /[\\/]src[\\/].*\.ts$/ }, ({ path }) => {
      const source = readFileSync(path, 'utf8');
      for (const [, names] of source.matchAll(/import\s*{([^}]*)}\s*from\s*'undici'/g)) {
        for (const name of names.split(',').map((part) => part.trim()).filter((part) => part && !part.startsWith('type '))) {
          const imported = name.split(/\s+as\s+/)[0];
          if (!offered.has(imported)) return { errors: [{ text: `${imported} from 'undici' is not in scripts/bundle/undici.cjs: add it there (from undici's own files)` }] };
        }
      }
      return undefined;
    });
  },
};

/**
 * graphql-js's `instanceOf` in its production form whatever NODE_ENV says. Outside
 * production it checks, on every `instanceof` that fails, whether the value comes from
 * a second copy of graphql-js; graphql-js runs that check for every field of every
 * answer (on a page of 100 records, a tenth of the execution), and it can find
 * nothing here: the bundle holds exactly one copy (checked after the build).
 */
const graphqlInstanceOf = {
  name: 'graphql-instanceof',
  setup(builder) {
    builder.onLoad({ filter: /[\\/]node_modules[\\/]graphql[\\/]jsutils[\\/]instanceOf\.js$/ }, ({ path }) => {
      const source = readFileSync(path, 'utf8');
      const production = source.replace(/const isProduction =[^;]*;/, 'const isProduction = true;');
      if (production === source) return { errors: [{ text: `${path}: no "const isProduction = ...;" to replace (a new graphql-js?): update scripts/bundle/build.mjs` }] };
      return { contents: production, loader: 'js' };
    });
  },
};

/**
 * Files of src/ that exist in dist/ only inside the bundle: the demo imports the emulator
 * from tools/emulator/ (the one import of src/ from outside it, .dependency-cruiser.cjs),
 * which a file compiled on its own would name by a path that dist/ does not have.
 */
const BUNDLE_ONLY = ['src/demo.ts'];

/** The .ts files of src/ that tsconfig.build.json compiles: all but its `exclude` folders, BUNDLE_ONLY and declaration files. */
function buildSources() {
  const { exclude = [] } = JSON.parse(readFileSync(join(root, 'tsconfig.build.json'), 'utf8'));
  const excluded = [...exclude, ...BUNDLE_ONLY].map((folder) => join(root, folder));
  const visit = (dir) =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      const path = join(dir, entry.name);
      if (excluded.some((folder) => path === folder || path.startsWith(`${folder}/`))) return [];
      if (entry.isDirectory()) return visit(path);
      return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
    });
  return visit(join(root, 'src'));
}

/** What every build below shares: CommonJS for Node 22 and later, each file with its source map. */
const forNode = { absWorkingDir: root, platform: 'node', target: 'node22', format: 'cjs', sourcemap: 'linked', logLevel: 'warning' };

await build({
  ...forNode,
  entryPoints: buildSources(),
  outdir: 'dist',
  outbase: 'src',
  bundle: false,
  tsconfig: 'tsconfig.build.json',
});

const result = await build({
  ...forNode,
  entryPoints: ['src/main.ts'],
  outfile: 'dist/main.js',
  bundle: true,
  external: EXTERNAL,
  plugins: [replacedPackages, graphqlInstanceOf],
  // Whitespace and syntax only: names stay, so a stack trace still reads; the source
  // map next to the bundle maps it back (node --enable-source-maps dist/index.js).
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: 'none',
  metafile: true,
});

// The emulator (tools/emulator/) for `npm run emulator` (dist/emulator/main.js) and for the
// benchmarks that load a build's emulator (dist/emulator/index.js): each one file with
// the modules of src/ it uses (the resource registry), packages loaded from node_modules.
await build({
  ...forNode,
  entryPoints: ['tools/emulator/index.ts', 'tools/emulator/main.ts'],
  outdir: 'dist/emulator',
  bundle: true,
  packages: 'external',
  tsconfig: 'tsconfig.build.json',
});

const graphqlCopies = new Set(Object.keys(result.metafile.inputs).flatMap((input) => input.match(/^(.*node_modules\/graphql)\//)?.[1] ?? []));
if (graphqlCopies.size !== 1) throw new Error(`the bundle holds ${graphqlCopies.size} copies of graphql-js (${[...graphqlCopies].join(', ')}): graphqlInstanceOf assumes exactly one`);

const bytes = Object.values(result.metafile.outputs).find((output) => output.entryPoint)?.bytes ?? 0;
process.stdout.write(`bundle: dist/main.js, ${(bytes / 2 ** 20).toFixed(1)} MiB, ${Object.keys(result.metafile.inputs).length} modules\n`);

await buildExplorerAssets();
process.stdout.write('explorer: dist/explorer/assets/\n');
