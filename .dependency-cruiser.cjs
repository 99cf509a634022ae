/**
 * The layering of src/, checked by `npm run architecture` (and test/unit/architecture.test.ts).
 * Floors, bottom to top (FLOORS below, also used for the figures the script prints):
 *   0 base        config, small helpers
 *   1 rest        upstream/ (the REST side), live/ (its lists polled for subscribers) and observability/events.ts (the event interface)
 *   2 graphql     graphql/ (server/ set-up, data/ layer, resolvers/, their generated types), the emulator, the explorer
 *   3 observe     observability/ (metrics, logs, OpenTelemetry, inline trace adapters), http/
 *   4 wiring      app.ts, server.ts, main.ts, index.ts, demo.ts
 * An import from a floor to a higher one is an upward arrow; the rules forbid the ones that matter.
 */
const FLOORS = [
  { name: 'base', path: '^src/(config|nodeVersion|compileCache|exampleQuery|browserRedirect|environment|logger)\\.ts$' },
  { name: 'rest', path: '^src/(upstream|live)/|^src/observability/events\\.ts$' },
  { name: 'graphql', path: '^src/(graphql|emulator|explorer|__generated__)/' },
  { name: 'observe', path: '^src/(observability|telemetry|http)/|^src/metrics\\.ts$' },
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
      name: 'upstream-knows-no-graphql',
      severity: 'error',
      comment: 'upstream/ is the REST side, live/ polls it: they know no GraphQL, and of observability only the event interface.',
      from: { path: '^src/(upstream|live)/' },
      to: { path: '^src/(graphql|http|explorer|telemetry)/|^src/observability/(?!events\\.ts$)|^src/(metrics|logger)\\.ts$' },
    },
    {
      name: 'graphql-sees-only-the-event-interface',
      severity: 'error',
      comment: 'graphql/ reports what happens through observability/events.ts; the adapters are wired at start-up.',
      from: { path: '^src/graphql/' },
      to: { path: '^src/(http|telemetry)/|^src/observability/(?!events\\.ts$)|^src/(metrics|logger)\\.ts$' },
    },
    {
      name: 'data-layer-knows-no-server-setup',
      severity: 'error',
      comment: 'graphql/data/ (and the resolvers on it) are read without the Apollo set-up in graphql/server/, which builds on them.',
      from: { path: '^src/graphql/(data|resolvers)/' },
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
      name: 'events-interface-stands-low',
      severity: 'error',
      comment: 'The event interface is what the domain imports: it names upstream types, and imports nothing above the REST side.',
      from: { path: '^src/observability/events\\.ts$' },
      to: { path: '^src/(?!upstream/)' },
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
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/explorer/browser/' },
    includeOnly: '^src/',
    // Type-only imports count: a circle through types is still a circle for the reader.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['require', 'node', 'default'], extensions: ['.ts', '.js', '.json'] },
  },
};

// Not a dependency-cruiser option (so not enumerable): scripts/architecture.mjs reads it for the figures.
Object.defineProperty(module.exports, 'FLOORS', { value: FLOORS, enumerable: false });
