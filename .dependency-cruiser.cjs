/**
 * The layering of src/, checked by `npm run architecture` (and test/unit/architecture.test.ts).
 * Floors, bottom to top (FLOORS below, also used for the figures the script prints):
 *   0 base        config/, memory/ (the replica's memory: its budget, charged from every floor, and its account), small helpers
 *   1 rest        upstream/ (the REST side) and live/ (its lists polled for subscribers), with upstream/observer.ts, the Observer port
 *                 that upstream/, live/, graphql/ and the observability adapters all import downward
 *   2 graphql     graphql/ (server/ set-up, data/ layer, resolvers/, their generated types), the explorer
 *   3 observe     observability/ (metrics, logs, OpenTelemetry, inline trace adapters), http/
 *   4 wiring      app.ts, server.ts, main.ts, index.ts, demo.ts
 * An import from a floor to a higher one is an upward arrow; the rules forbid the ones that matter.
 * Beside src/, the product, stand what builds on it (tools/, bench/, test/): src/ imports none
 * of them but through one door, the demo's emulator (`src-is-the-product`).
 * Every file or folder a pattern here names must exist (scripts/namedPaths.cjs, `missing` in
 * `npm run architecture`): a rule about a file that is gone checks nothing, silently.
 */
const FLOORS = [
  { name: 'base', path: '^src/(config|memory)/|^src/(nodeVersion|compileCache|heapLimit|exampleQuery|browserRedirect|routerSecret)\\.ts$' },
  { name: 'rest', path: '^src/(upstream|live)/' },
  { name: 'graphql', path: '^src/(graphql|explorer|cache|__generated__)/' },
  { name: 'observe', path: '^src/(observability|http)/' },
  { name: 'wiring', path: '^src/(app|server|main|index|demo)\\.ts$' },
];

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import circle: neither module can be read (or loaded) without the other.',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'src-is-the-product',
      severity: 'error',
      comment:
        'src/ is the product. The harness (tools/: the upstream emulator, the probes), the benchmarks (bench/) and the tests (test/) build on it; it never imports them, but for the demo (the next rule).',
      from: { path: '^src/', pathNot: '^src/demo\\.ts$' },
      to: { path: '^(tools|bench|test)/' },
    },
    {
      name: 'demo-reaches-the-emulator-by-one-door',
      severity: 'error',
      comment:
        "The demo (`npm start` with no upstream configured, CONTRACT.md) runs on the upstream emulator, and is the one module of src/ that imports anything outside it: tools/emulator/index.ts, the emulator's front door, and nothing else of tools/, bench/ or test/.",
      from: { path: '^src/demo\\.ts$' },
      to: { path: '^(tools|bench|test)/', pathNot: '^tools/emulator/index\\.ts$' },
    },
    {
      name: 'upstream-knows-no-graphql',
      severity: 'error',
      comment: 'upstream/ is the REST side, live/ polls it: they know no GraphQL, and nothing of observability/, the logger and the metrics included (they report through the Observer port, upstream/observer.ts).',
      from: { path: '^src/(upstream|live)/' },
      to: { path: '^src/(graphql|http|explorer|observability)/' },
    },
    {
      name: 'graphql-sees-only-the-event-interface',
      severity: 'error',
      comment: 'graphql/ reports what happens through the Observer port (upstream/observer.ts); the adapters are wired at start-up.',
      from: { path: '^src/graphql/' },
      to: { path: '^src/(http|observability)/' },
    },
    {
      name: 'reading-through-the-tenant-reader',
      severity: 'error',
      comment: "A company's reads for a request go through upstream/reading/tenantReader.ts: its entity index, page cache and page-chain guard are its own (the wiring builds the process-wide entity indexes).",
      from: { path: '^src/(?!upstream/reading/)(?!(app|server|main|index|demo)\\.ts$)' },
      to: { path: '^src/upstream/reading/(?!tenantReader\\.ts$)' },
    },
    {
      name: 'upstream-rooms-run-one-way',
      severity: 'error',
      comment: 'Inside upstream/: reading/ builds on the client, the client on its steps in call/ and on token/, resilience/, transport/ and resources/; none of those imports the client or reading/.',
      from: { path: '^src/upstream/(call|token|resilience|transport|resources)/|^src/upstream/[^/]+\\.ts$' },
      to: { path: '^src/upstream/reading/' },
    },
    {
      name: 'client-rooms-know-no-client',
      severity: 'error',
      comment: 'call/, token/, resilience/, transport/ and resources/ serve the client; they never import it.',
      from: { path: '^src/upstream/(call|token|resilience|transport|resources)/' },
      to: { path: '^src/upstream/client\\.ts$' },
    },
    {
      name: 'data-layer-knows-no-server-setup',
      severity: 'error',
      comment: 'graphql/data/ (and the resolvers on it) are read without the Apollo set-up in graphql/server/, which builds on them.',
      from: { path: '^src/graphql/(data|resolvers)/' },
      to: { path: '^src/graphql/server/' },
    },
    {
      name: 'http-knows-no-graphql-setup',
      severity: 'error',
      comment: "http/ is the transport: the GraphQL set-up it serves (Apollo Server, the subscribe gate) is handed to it at wiring (server.ts), never imported.",
      from: { path: '^src/http/' },
      to: { path: '^src/graphql/server/' },
    },
    {
      name: 'observability-imports-nothing-above',
      severity: 'error',
      comment: 'The observability layer is built by the wiring; it never reaches up into it or into the HTTP routes.',
      from: { path: '^src/observability/' },
      to: { path: '^src/(http|explorer)/|^src/(app|server|main|index|demo)\\.ts$' },
    },
    {
      name: 'observer-port-stands-low',
      severity: 'error',
      comment: 'The Observer port is what the domain imports: it names upstream types, and imports nothing above the REST side.',
      from: { path: '^src/upstream/observer\\.ts$' },
      to: { path: '^src/(?!upstream/)' },
    },
    {
      name: 'refusals-built-in-admission',
      severity: 'error',
      comment:
        'A refusal (its reason, code, status or close code, message) is built from graphql/admission/refusals.ts only in graphql/admission/ (the WebSocket upgrades and message rate included: upgradeGate.ts) and by the HTTP bounds (http/requestBounds.ts, answering through http/respond.ts); observability/metrics/refusals.ts only counts them. Everything else may name the types.',
      from: { path: '^src/', pathNot: '^src/(graphql/admission/|http/(requestBounds|respond)\\.ts$|observability/metrics/refusals\\.ts$)' },
      to: { path: '^src/graphql/admission/refusals\\.ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'no-upward-into-wiring',
      severity: 'error',
      comment: 'app.ts, server.ts, main.ts, index.ts and demo.ts wire the floors below; nothing below imports them.',
      from: { path: '^src/(?!(app|server|main|index|demo)\\.ts$)' },
      to: { path: '^src/(app|server|main|index|demo)\\.ts$' },
    },
  ],
  options: {
    // tools/, bench/ and test/ are seen (an import of them from src/ breaks a rule above), not cruised.
    doNotFollow: { path: 'node_modules|^(tools|bench|test)/' },
    exclude: { path: '^src/explorer/browser/' },
    includeOnly: '^(src|tools|bench|test)/',
    // Type-only imports count: a circle through types is still a circle for the reader.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['require', 'node', 'default'], extensions: ['.ts', '.js', '.json'] },
  },
};

// Not a dependency-cruiser option (so not enumerable): scripts/architecture.mjs reads it for the figures.
Object.defineProperty(module.exports, 'FLOORS', { value: FLOORS, enumerable: false });
