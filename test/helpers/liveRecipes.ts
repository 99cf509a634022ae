import type { ApolloClient, ObservableQuery } from '@apollo/client';
import type { Client as UrqlClient, TypedDocumentNode } from '@urql/core';
import path from 'node:path';
import ts from 'typescript';
import { readDoc, repoRoot, section } from './markdown';

/**
 * docs/frontend.md's recipes as the page prints them: its TypeScript blocks, compiled to
 * CommonJS and evaluated, with only the example URLs, the credentials and what a block
 * `declare`s supplied. The "Live updates" recipes for Apollo Client 4 and urql
 * (test/e2e/hive-gateway.test.ts runs them through Hive Gateway, and
 * test/integration/frontendRecipes.test.ts against the subgraph itself for a refused
 * identity), the refusal helper, and the paging recipes
 * (test/integration/frontendRecipes.test.ts).
 */

const page = readDoc('docs/frontend.md');
const blocksOf = (text: string) => [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1]!);
const blocks = blocksOf(page);
const liveBlocks = blocksOf(section(page, 'Live updates'));
/** The one block of `from` that holds `marker`. */
function blockWith(from: string[], marker: string): string {
  const found = from.filter((block) => block.includes(marker));
  if (found.length !== 1) throw new Error(`docs/frontend.md: ${found.length} TypeScript blocks hold ${marker}, not one`);
  return found[0]!;
}
/** The Apollo Client 4 recipe (the block with `subscribeToMore`). */
export const APOLLO_RECIPE = blockWith(liveBlocks, 'subscribeToMore');
/** The urql recipe (the block with `subscriptionExchange`). */
export const URQL_RECIPE = blockWith(liveBlocks, 'subscriptionExchange');
/** The helper that reads a refusal's code (`refusalCode`, `liveClose`). */
export const REFUSAL_HELPER = blockWith(liveBlocks, 'export function refusalCode');
/** Apollo Client 4's client with the paging cache (the block with `relayStylePagination`). */
export const APOLLO_CLIENT = blockWith(blocks, 'relayStylePagination(');
/** The Apollo Client 4 location picker hook (`useLocationPicker`). */
export const APOLLO_PICKER = blockWith(blocks, 'export function useLocationPicker');
/** urql's client with Graphcache and the location picker's paging (`loadLocations`). */
export const URQL_CLIENT = blockWith(blocks, 'relayPagination()');

/** A shift of the rota the recipes query. */
export interface RecipeShift {
  id: string;
  nodeId: string;
  end: string;
}
/** The rota the recipes query: the first 100 shifts and whether there are more. */
export interface RecipeRota {
  shifts: { nodes: RecipeShift[]; pageInfo: { hasNextPage: boolean } } | null;
}

/** What the Apollo Client 4 recipe exports. */
export interface ApolloRecipe {
  liveClient: ApolloClient;
  rota: ObservableQuery<RecipeRota>;
  stopLive: () => void;
}
/** What the urql recipe exports. */
export interface UrqlRecipe {
  urqlLive: UrqlClient;
  rotaQuery: TypedDocumentNode<RecipeRota>;
  stopLive: () => void;
}
/** What the refusal helper exports. */
export interface RefusalHelper {
  refusalCode(error: unknown): string | undefined;
  liveClose(error: unknown): { code: number; reason: string } | undefined;
}

/**
 * A block compiled to CommonJS and run: `replace` swaps example text (URLs, a token) for
 * the test's, `declared` gives what the block declares (`tenantId`, ...). Its relative
 * imports resolve from examples/frontend/, where test/unit/frontend.test.ts compiles the
 * blocks. Returns what it exports.
 */
export function runBlock<T>(block: string, options: { replace?: Array<[string, string]>; declared?: Record<string, unknown> } = {}): T {
  let source = block;
  for (const [from, to] of options.replace ?? []) {
    if (!source.includes(from)) throw new Error(`the block has no ${from} to replace`);
    source = source.replaceAll(from, to);
  }
  const { outputText } = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true } });
  const exported: Record<string, unknown> = {};
  const from = path.join(repoRoot, 'examples', 'frontend');
  const load = (specifier: string): unknown => require(specifier.startsWith('.') ? path.resolve(from, specifier) : specifier);
  const declared = Object.entries(options.declared ?? {});
  new Function('require', 'exports', ...declared.map(([name]) => name), outputText)(load, exported, ...declared.map(([, value]) => value));
  return exported as T;
}

/** A "Live updates" recipe run with the URLs, tenant and error sink given. */
export function runRecipe<T>(block: string, urls: { http: string; ws: string }, tenantId: string, showLiveError: (error: Error) => void): T {
  return runBlock<T>(block, {
    replace: [
      ['wss://gateway.example.com/graphql', urls.ws],
      ['https://gateway.example.com/graphql', urls.http],
    ],
    declared: { tenantId, showLiveError },
  });
}
