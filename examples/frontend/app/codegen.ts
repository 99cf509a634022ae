/**
 * GraphQL Code Generator for a frontend app's own operations. As committed it runs here,
 * in this repository: `cd examples/frontend/app && npx --yes graphql-codegen` compiles
 * src/LocationPicker.ts against the repository's supergraph.api.graphql. In your app:
 * copy this file to the app's root, `npm i -D @graphql-codegen/cli
 * @graphql-codegen/client-preset`, copy the schema you compile against into the app
 * (docs/frontend.md "The client-facing schema": supergraph.api.graphql through the
 * router, schema.api.graphql against the subgraph alone, as in the demo) and point
 * `schema` at it. Operations written with `graphql(...)` from ./src/gql become typed
 * documents; test/unit/frontend.test.ts runs this file as it is and type-checks the
 * result, and loads the generated files in plain Node ESM.
 */
import type { CodegenConfig } from '@graphql-codegen/cli';

const config: CodegenConfig = {
  // This repository's file, relative to this one; in your app, e.g. 'schema/supergraph.api.graphql'.
  schema: '../../../supergraph.api.graphql',
  documents: ['src/**/*.{ts,tsx}', '!src/gql/**'],
  ignoreNoDocuments: true,
  generates: {
    'src/gql/': {
      preset: 'client',
      // `./graphql.js`, not `./graphql`: the generated files then import each other in an
      // ESM project (`"type": "module"`, `"module": "nodenext"`, plain Node) as well as
      // through a bundler; without it Node stops with ERR_MODULE_NOT_FOUND.
      config: { importExtension: '.js', useTypeImports: true, enumsAsTypes: true, scalars: { DateTime: 'string' } },
    },
  },
};

export default config;
