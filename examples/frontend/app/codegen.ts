/**
 * GraphQL Code Generator for a frontend app's own operations: copy this file to your
 * app's root, `npm i -D @graphql-codegen/cli @graphql-codegen/client-preset`, put the
 * schema you compile against in schema/ (README "The client-facing schema":
 * supergraph.api.graphql through the router, schema.api.graphql against the subgraph
 * alone, as in the demo), and run `npx graphql-codegen`. Operations written with
 * `graphql(...)` from ./src/gql become typed documents; test/unit/frontend.test.ts runs
 * this file in a throwaway app (src/LocationPicker.ts) and type-checks the result.
 */
import type { CodegenConfig } from '@graphql-codegen/cli';

const config: CodegenConfig = {
  schema: 'schema/supergraph.api.graphql',
  documents: ['src/**/*.{ts,tsx}', '!src/gql/**'],
  ignoreNoDocuments: true,
  generates: {
    'src/gql/': {
      preset: 'client',
      config: { useTypeImports: true, enumsAsTypes: true, scalars: { DateTime: 'string' } },
    },
  },
};

export default config;
