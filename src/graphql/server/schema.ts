/**
 * The executable subgraph schema: `schema.graphql` (found from any working directory)
 * with the resolvers built from the resource registry, the `Node` resolvers and each
 * type's own resolvers merged in.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { buildSubgraphSchema, type GraphQLResolverMap } from '@apollo/subgraph';
import type { GraphQLSchema } from 'graphql';
import { gql } from 'graphql-tag';
import { RESOURCES } from '../../upstream/resources';
import { liveResolvers } from '../resolvers/liveResolvers';
import { nodeResolvers } from '../data/node';
import { mergeTypeModules, type TypeResolverModule } from '../resolvers/merge';
import type { Resolvers } from '../../__generated__/resolvers-types';
import { resourceResolvers } from '../resolvers/resourceResolvers';
import { resolvers } from '../resolvers';

/**
 * `schema.graphql` sits at the package root, next to `package.json`: found by walking
 * up from this code, which is in `src/graphql/server/` or `dist/graphql/server/`, or in the production
 * bundle `dist/main.js`. So the server finds it from any working directory (the Docker
 * image copies both next to `dist/`).
 */
export const SCHEMA_PATH = join(packageRoot(__dirname), 'schema.graphql');

function packageRoot(from: string): string {
  for (let dir = from, up = 0; up < 4; dir = dirname(dir), up++) {
    if (existsSync(join(dir, 'package.json'))) return dir;
  }
  return join(from, '..', '..', '..');
}

export function loadTypeDefs(): string {
  return readFileSync(SCHEMA_PATH, 'utf8');
}

export function createSubgraphSchema(): GraphQLSchema {
  return buildSubgraphSchema([{ typeDefs: gql(loadTypeDefs()), resolvers: subgraphResolvers() as GraphQLResolverMap<unknown> }]);
}

/**
 * The schema's resolvers: those built from the registry, the live ones, the `Node` ones
 * and the type files' (`typeFiles`), merged by the one merger: a field two of them
 * define stops the start, naming both (resolvers/merge.ts).
 */
export function subgraphResolvers(typeFiles: TypeResolverModule = resolvers): Resolvers {
  return mergeTypeModules(
    { 'resolvers/resourceResolvers': resourceResolvers(RESOURCES), 'resolvers/liveResolvers': liveResolvers(RESOURCES), 'data/node': nodeResolvers, 'resolvers/index': typeFiles },
    'src/graphql/',
  );
}
