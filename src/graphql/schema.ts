import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildSubgraphSchema, type GraphQLResolverMap } from '@apollo/subgraph';
import type { GraphQLSchema } from 'graphql';
import { gql } from 'graphql-tag';
import { resolvers } from './resolvers';

/**
 * `schema.graphql` sits at the package root, two levels above this module both in
 * `src/graphql/` and in `dist/graphql/`, so the server finds it from any working
 * directory (and the Docker image copies it next to `dist/`).
 */
export const SCHEMA_PATH = join(__dirname, '..', '..', 'schema.graphql');

export function loadTypeDefs(): string {
  return readFileSync(SCHEMA_PATH, 'utf8');
}

export function createSubgraphSchema(): GraphQLSchema {
  return buildSubgraphSchema([{ typeDefs: gql(loadTypeDefs()), resolvers: resolvers as GraphQLResolverMap<unknown> }]);
}
