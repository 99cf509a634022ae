import type { ApolloClient, ObservableQuery } from '@apollo/client';
import type { Client as UrqlClient, TypedDocumentNode } from '@urql/core';
import ts from 'typescript';
import { readDoc, section } from './markdown';

/**
 * docs/frontend.md's "Live updates" recipes for Apollo Client 4 and urql, as the page
 * prints them: its TypeScript blocks, compiled to CommonJS and evaluated, with only the
 * gateway's URLs and the declared `tenantId` and `showLiveError` supplied
 * (test/e2e/hive-gateway.test.ts runs them through Hive Gateway, and against the
 * subgraph itself for a refused identity).
 */

const page = readDoc('docs/frontend.md');
const blocks = [...section(page, 'Live updates').matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1]!);
/** The Apollo Client 4 recipe (the block with `subscribeToMore`). */
export const APOLLO_RECIPE = blocks.find((block) => block.includes('subscribeToMore'))!;
/** The urql recipe (the block with `subscriptionExchange`). */
export const URQL_RECIPE = blocks.find((block) => block.includes('subscriptionExchange'))!;

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

/** A recipe block compiled to CommonJS and run with the URLs, tenant and error sink given. */
export function runRecipe<T>(block: string, urls: { http: string; ws: string }, tenantId: string, showLiveError: (error: Error) => void): T {
  const source = block.replaceAll('wss://gateway.example.com/graphql', urls.ws).replaceAll('https://gateway.example.com/graphql', urls.http);
  const { outputText } = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } });
  const exported: Record<string, unknown> = {};
  new Function('require', 'exports', 'tenantId', 'showLiveError', outputText)(require, exported, tenantId, showLiveError);
  return exported as T;
}
