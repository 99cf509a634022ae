// ESLint 10 flat config. Today it lints the GraphQL schema only: every type, field,
// argument, enum value and directive of our subgraph schema must carry a description,
// because the explorer's docs pane, IDEs and relay-compiler's generated types show
// those descriptions or nothing (`npm run lint`; test/unit/schema-lint.test.ts runs it).
import graphqlPlugin from '@graphql-eslint/eslint-plugin';

export default [
  {
    files: ['schema.graphql', 'supergraph.api.graphql'],
    languageOptions: { parser: graphqlPlugin.parser },
    plugins: { '@graphql-eslint': graphqlPlugin },
    rules: {
      '@graphql-eslint/require-description': [
        'error',
        {
          types: true,
          FieldDefinition: true,
          InputValueDefinition: true,
          EnumValueDefinition: true,
          DirectiveDefinition: true,
        },
      ],
    },
  },
];
