/**
 * Stylesheets imported for their effect (bootstrap.ts imports GraphiQL's): esbuild bundles
 * them (scripts/bundle/explorer.mjs); to the type checker they are modules with nothing
 * to import. TypeScript 7 refuses a side-effect import it cannot resolve
 * (`noUncheckedSideEffectImports`), and a .css file has no types of its own.
 */
declare module '*.css';
