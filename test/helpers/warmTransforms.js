const { readdirSync } = require('node:fs');
const { dirname, join } = require('node:path');
const vm = require('node:vm');

/**
 * The packages that ship as ESM only, which ts-jest compiles to CommonJS like our own
 * files (jest.config.js, `transformIgnorePatterns`, says why).
 */
const ESM_ONLY_PACKAGES = ['jose', 'cockatiel'];

/**
 * Fills Jest's transform cache with every TypeScript file of src/, tools/ and test/ and the files
 * of the ESM-only packages the suites load (ESM_ONLY_PACKAGES), in this
 * process, before the workers start (jest.config.js's `globalSetup`, test/helpers/runTmpdir.js,
 * when the test line asks: JEST_WARM_TRANSFORM_CACHE=1, scripts/test.sh).
 *
 * In a fresh clone the cache is empty, and the line's first suites start at once on three
 * workers, each importing most of src/: each worker compiled the same files at the same
 * moment (Jest has no lock between workers), and warmed TypeScript's compiler up on its own.
 * Measured on 28 November 2026: ts-jest's compiling was 17 to 23 CPU-seconds of a line,
 * against 8.4 for src/ and test/ (309 files) in one process. A file compiled here is read from the
 * cache by the workers, under the key they compute: the same transformer
 * (tsJestShared.js, whose key names the file's path, its text and the settings) and the
 * options jest-runtime loads a CommonJS module with.
 *
 * A run of some suites (a path, `--selectProjects`) does not ask: it would compile files it
 * never loads.
 */
async function warmTransforms(projectConfig, files = filesToWarm(projectConfig.rootDir)) {
  const { createScriptTransformer } = require('@jest/transform');
  const transformer = await createScriptTransformer(projectConfig);
  // jest-runtime's `defaultTransformOptions`, with which it requires a module (no coverage).
  const options = {
    instrument: false,
    isInternalModule: false,
    supportsDynamicImport: typeof vm.SyntheticModule === 'function',
    supportsExportNamespaceFrom: false,
    supportsStaticESM: false,
    supportsTopLevelAwait: false,
  };
  for (const file of files) transformer.transform(file, options);
  return files.length;
}

/** What the line's suites load and ts-jest compiles: src/, tools/ and test/, and the ESM-only packages' files. */
function filesToWarm(rootDir) {
  return [
    ...['src', 'tools', 'test'].flatMap((dir) => filesEndingIn(join(rootDir, dir), '.ts')),
    // The folder of each package's entry point, as jest-runtime resolves it (`require`).
    ...ESM_ONLY_PACKAGES.flatMap((name) => filesEndingIn(dirname(require.resolve(name, { paths: [rootDir] })), '.js')),
  ];
}

/** The files under `dir` whose names end in `ending` (TypeScript's declaration files left out: nothing requires them). */
function filesEndingIn(dir, ending) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) return filesEndingIn(full, ending);
    return entry.name.endsWith(ending) && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

module.exports = { warmTransforms, ESM_ONLY_PACKAGES };
