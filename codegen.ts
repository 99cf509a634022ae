import type { CodegenConfig } from '@graphql-codegen/cli';
import { RESOURCES } from './src/upstream/resources';

/**
 * Two outputs from one schema:
 * - resolver types for this server, with mappers to the upstream record types so a
 *   resolver that returns the wrong shape fails to compile;
 * - typed documents for frontend teams, from the operations in `operations/`.
 * Both are committed; the test line regenerates them and fails on drift.
 */
const config: CodegenConfig = {
  schema: 'schema.graphql',
  generates: {
    'src/__generated__/resolvers-types.ts': {
      plugins: ['typescript', 'typescript-resolvers'],
      config: {
        federation: true,
        useIndexSignature: true,
        useTypeImports: true,
        enumsAsTypes: true,
        contextType: '../graphql/context#GraphQLContext',
        scalars: { DateTime: 'string' },
        // From the registry: each resource's GraphQL type maps to its record type
        // (`Location` → `LocationRecord`, exported by src/upstream/resources), so a new
        // resource needs no edit here.
        mappers: {
          ...Object.fromEntries(
            RESOURCES.flatMap(({ typename }) => [
              [typename, `../upstream/resources#${typename}Record`],
              [`${typename}Connection`, `../graphql/connections#ConnectionPage<${typename}Record>`],
              [`${typename}Edge`, `../graphql/connections#Edge<${typename}Record>`],
            ]),
          ),
          User: '../upstream/records#UserReference',
        },
      },
    },
    'operations/__generated__/': {
      preset: 'client',
      documents: ['operations/**/*.graphql'],
      config: {
        useTypeImports: true,
        enumsAsTypes: true,
        scalars: { DateTime: 'string' },
      },
    },
  },
};

export default config;
