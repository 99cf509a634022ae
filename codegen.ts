import { createHash } from 'node:crypto';
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
        contextType: '../graphql/data/context#GraphQLContext',
        scalars: { DateTime: 'string' },
        // From the registry: each resource's GraphQL type maps to its record type
        // (`Location` → `LocationRecord`, exported by src/upstream/resources), so a new
        // resource needs no edit here.
        mappers: {
          ...Object.fromEntries(
            RESOURCES.flatMap(({ typename }) => [
              [typename, `../upstream/resources#${typename}Record`],
              [`${typename}Connection`, `../graphql/data/connections#ConnectionPage<${typename}Record>`],
              [`${typename}Edge`, `../graphql/data/connections#Edge<${typename}Record>`],
            ]),
          ),
          User: '../upstream/records#UserReference',
        },
      },
    },
    'operations/__generated__/': {
      preset: 'client',
      documents: ['operations/**/*.graphql'],
      // persisted-documents.json, `{ id: body }`, for Hive's persisted documents and,
      // through scripts/persisted-documents.mts, Apollo Router's safelist manifest. The
      // id is the plain hex SHA-256 of the body, as Apollo's persisted queries use it.
      presetConfig: {
        persistedDocuments: { hashAlgorithm: (body: string) => createHash('sha256').update(body).digest('hex') },
      },
      // `./graphql.js`, not `./graphql`: the files then import from a `nodenext` ESM
      // project as well as from a bundler or CommonJS one (test/unit/frontend.test.ts).
      config: {
        importExtension: '.js',
        useTypeImports: true,
        enumsAsTypes: true,
        scalars: { DateTime: 'string' },
      },
    },
  },
};

export default config;
