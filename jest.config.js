/**
 * The suites as Jest projects, each named in the output (`--selectProjects e2e:browser`
 * runs one): unit (test/unit, one module each, no server), integration (test/integration:
 * the real HTTP emulator, real redis-servers, the server in this process), and end to end
 * (test/e2e, test/browser): the built server as a process, the gateways in front of it
 * (Apollo Gateway, Hive Gateway), the explorer in headless Chromium, Grafbase Gateway, and
 * the production image's install. A file of test/e2e that no other e2e project names runs
 * in e2e:process.
 *
 * Every suite runs beside any other: each binds port 0 on 127.0.0.1 (or starts its own
 * redis-server on a port of its own), writes only into its own mkdtemp folder (inside the run's own TMPDIR, test/helpers/runTmpdir.js), and reads
 * dist/ (built by scripts/test.sh before the tests) without writing it. Most suites wait
 * on sockets and child processes rather than compute, so on the 2-core machine three
 * workers keep both cores busy: measured alternately on 26 November 2026 (before the
 * projects shared a transform cache), jest took 120 to 139 s on three workers and 161 to
 * 169 s on two. README.md, "The test line", gives the line's own figures. `--maxWorkers`
 * on the command line overrides it.
 *
 * `npm test` starts jest as `node --max-semi-space-size=32 …/jest.js`, and its workers
 * inherit the flag: jest allocates much and briefly (module registries, transforms,
 * answers), and semi-spaces of up to 32 MiB instead of V8's default collect
 * it less often. Measured on 27 November 2026 on ten integration and unit suites on 3
 * workers (user + sys): 36.2 and 35.7 CPU-seconds without the flag; 31.8 at 32 MiB, 33.0
 * and 32.1 at 64 MiB, 32.6 at 128 MiB.
 *
 * jose 6 and cockatiel 4 ship as ESM only. Rather than running jest in its
 * experimental ESM mode, ts-jest transforms their .js files to CommonJS (allowJs), so
 * every module, ours and theirs, loads through one CommonJS module system.
 */
const { createHash } = require('node:crypto');
const { ESM_ONLY_PACKAGES } = require('./test/helpers/warmTransforms');

/**
 * What every project shares, the transform cache included: one `id` for all projects of
 * this checkout (Jest keeps a transform cache folder per id, and otherwise derives a
 * different id for each project), and ts-jest behind a cache key that leaves the project
 * out (test/helpers/tsJestShared.js says why and what it saved). A file is then compiled
 * once per line, not once per project that loads it.
 */
const base = {
  id: `wfs-subgraph-${createHash('sha256').update(__dirname).digest('hex').slice(0, 12)}`,
  testEnvironment: 'node',
  rootDir: __dirname,
  // Jest's file map (the haste map) lists the files under `roots`, and a fresh clone
  // builds it first, before any worker starts: under the whole checkout it walked
  // node_modules too (140,000 files), 3.2 s of wall and CPU, against 0.7 s for test/. The
  // suites import src/ and the rest by relative path, which Jest resolves on disk.
  roots: ['<rootDir>/test'],
  transform: {
    '^.+\\.[tj]s$': ['<rootDir>/test/helpers/tsJestShared.js', { tsconfig: '<rootDir>/tsconfig.test.json' }],
  },
  transformIgnorePatterns: [`/node_modules/(?!(${ESM_ONLY_PACKAGES.join('|')})/)`],
  setupFilesAfterEnv: ['<rootDir>/test/helpers/failOnConsole.ts', '<rootDir>/test/helpers/stackTraceLimit.ts'],
};

/** The end-to-end suites of test/e2e by project; the rest of test/e2e is e2e:process. */
const E2E = {
  'e2e:gateways': ['gateway', 'hive-gateway'],
  'e2e:grafbase': ['grafbase'],
  'e2e:image': ['image'],
};
const e2eFiles = (names) => names.map((name) => `<rootDir>/test/e2e/${name}.test.ts`);

/** @type {import('jest').Config} */
module.exports = {
  maxWorkers: 3,
  testTimeout: 30000,
  reporters: ['default', '<rootDir>/test/helpers/suiteDurations.js'],
  testSequencer: '<rootDir>/test/helpers/slowFirstSequencer.js',
  globalSetup: '<rootDir>/test/helpers/runTmpdir.js',
  globalTeardown: '<rootDir>/test/helpers/runTmpdirTeardown.js',
  projects: [
    { ...base, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    { ...base, displayName: 'integration', testMatch: ['<rootDir>/test/integration/**/*.test.ts'] },
    { ...base, displayName: 'e2e:process', testMatch: ['<rootDir>/test/e2e/**/*.test.ts'], testPathIgnorePatterns: ['/node_modules/', ...Object.values(E2E).flat().map((name) => `/test/e2e/${name}\\.test\\.ts$`)] },
    ...Object.entries(E2E).map(([displayName, names]) => ({ ...base, displayName, testMatch: e2eFiles(names) })),
    { ...base, displayName: 'e2e:browser', testMatch: ['<rootDir>/test/browser/**/*.test.ts'] },
  ],
};
