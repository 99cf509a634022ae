import type { CodegenConfig } from '@graphql-codegen/cli';

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
        mappers: {
          Location: '../upstream/resources#LocationRecord',
          Shift: '../upstream/resources#ShiftRecord',
          LocationConnection: '../graphql/connections#ConnectionPage<LocationRecord>',
          ShiftConnection: '../graphql/connections#ConnectionPage<ShiftRecord>',
          LocationEdge: '../graphql/connections#Edge<LocationRecord>',
          ShiftEdge: '../graphql/connections#Edge<ShiftRecord>',
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
