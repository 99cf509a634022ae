const { createHash } = require('node:crypto');
const { readFileSync } = require('node:fs');
const { dirname, join } = require('node:path');
const tsJest = require('ts-jest').default;

/**
 * ts-jest (jest.config.js, `transform`), with a cache key that names only what its output
 * depends on, so that the seven Jest projects share one transform cache.
 *
 * tsconfig.test.json sets `isolatedModules`: ts-jest then compiles each file alone
 * (TypeScript's transpileModule), and its output depends on the file's path and text,
 * the compiler options (tsconfig.json and tsconfig.test.json), and the versions of
 * ts-jest and TypeScript. ts-jest's own key adds the whole Jest project configuration
 * (display name, test patterns), and Jest keeps its transform cache in a folder per
 * project `id`: each project compiled every file again. On a fresh clone that was most
 * of the line's work (measured on 26 November 2026, three workers, cold cache: 306 s of
 * CPU for Jest with per-project caches, 196 s with this one).
 *
 * That key is right only while each file is compiled alone: with `isolatedModules` off,
 * ts-jest type-checks each file with the program around it, and its output (and errors)
 * would depend on other files the key does not name. So the transform refuses to start
 * without it (`requireIsolatedModules`, test/unit/tsJestShared.test.ts).
 *
 * The rest is ts-jest's: `process` is ts-jest's own, unchanged.
 */
const root = join(__dirname, '..', '..');

/**
 * Throws unless the transform's settings compile each file alone: `isolatedModules` in
 * the tsconfig ts-jest is given (followed through `extends`), or in ts-jest's options.
 */
function requireIsolatedModules(options) {
  const tsconfig = options?.tsconfig ?? join(root, 'tsconfig.json');
  let compilerOptions;
  let where;
  if (typeof tsconfig === 'string') {
    const ts = require('typescript');
    where = tsconfig.replace('<rootDir>', root);
    const read = ts.readConfigFile(where, ts.sys.readFile);
    if (read.error) throw new Error(`test/helpers/tsJestShared.js: cannot read ${where}: ${ts.flattenDiagnosticMessageText(read.error.messageText, ' ')}`);
    // No file list is needed, only the options: a host that lists no directory keeps this quick.
    compilerOptions = ts.parseJsonConfigFileContent(read.config, { ...ts.sys, readDirectory: () => [] }, dirname(where)).options;
  } else {
    where = 'the inline tsconfig';
    compilerOptions = tsconfig?.compilerOptions ?? tsconfig ?? {};
  }
  if (compilerOptions.isolatedModules === true || options?.isolatedModules === true) return;
  throw new Error(
    `test/helpers/tsJestShared.js: ${where} must set "isolatedModules": true. The shared transform cache key names only each file's path and text and the settings; with isolatedModules off, ts-jest's output depends on other files too, and stale compiled files would be served.`,
  );
}

/**
 * One transformer per worker and settings: Jest asks for the transformer again for each
 * suite (a new ScriptTransformer per test file), and each asking read, parsed and hashed
 * the tsconfigs again (here and in ts-jest), about 20 ms. ts-jest's transformer is given
 * the Jest project's configuration with each file (`process`), so one instance serves
 * every project.
 */
const transformers = new Map();

module.exports = {
  requireIsolatedModules,
  createTransformer(options) {
    const settings = JSON.stringify(options ?? null);
    if (!transformers.has(settings)) transformers.set(settings, createSharedTransformer(options));
    return transformers.get(settings);
  },
};

function createSharedTransformer(options) {
  requireIsolatedModules(options);
  const inner = tsJest.createTransformer(options);
  const salt = createHash('sha256')
    .update(JSON.stringify([require('ts-jest/package.json').version, require('typescript/package.json').version, options ?? null]))
    .update(readFileSync(join(root, 'tsconfig.json')))
    .update(readFileSync(join(root, 'tsconfig.test.json')))
    .update(readFileSync(__filename))
    .digest('hex');
  return {
    canInstrument: false,
    getCacheKey(source, filename, { instrument, supportsStaticESM }) {
      return createHash('sha256')
        .update(salt)
        .update(`\0${filename}\0${instrument ? 'instrument' : ''}\0${supportsStaticESM ? 'esm' : ''}\0`)
        .update(source)
        .digest('hex');
    },
    process(source, filename, transformOptions) {
      return inner.process(source, filename, transformOptions);
    },
  };
}
