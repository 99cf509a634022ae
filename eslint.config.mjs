// ESLint 10 flat config, run by `npm run lint` in the test line (scripts/test.sh) with
// `--max-warnings 0`: every finding fails the line.
//
// - The GraphQL schemas: every type, field, argument, enum value and directive of our
//   subgraph schema must carry a description, because the explorer's docs pane, IDEs and
//   relay-compiler's generated types show those descriptions or nothing
//   (test/unit/lint.test.ts runs it).
// - The TypeScript of src/, tools/, test/, scripts/, bench/ and router/ (Hive Gateway's config and
//   response-cache plugin, which the gateway loads): ESLint's and typescript-eslint's
//   recommended rules, without type information (a type-aware lint would take as long as
//   the typecheck beside it, which already runs with `strict`), and the tests' two timing
//   conventions (eslint-rules/testTiming.cjs).
import graphqlPlugin from '@graphql-eslint/eslint-plugin';
import { builtinRules } from 'eslint/use-at-your-own-risk';
import tseslint from 'typescript-eslint';
import testTiming from './eslint-rules/testTiming.cjs';

const typescript = ['{src,tools,test,scripts,bench,router}/**/*.{ts,mts}'];

// ESLint's own `recommended` set is the rules its documentation marks recommended; that
// is all `@eslint/js`'s config is, and reading the marks saves a dependency.
const eslintRecommended = Object.fromEntries(
  [...builtinRules].filter(([, rule]) => rule.meta?.docs?.recommended).map(([name]) => [name, 'error']),
);

export default [
  {
    // Generated from schema.graphql and operations/ (`npm run codegen`; the test line checks it is up to date).
    ignores: ['src/__generated__/**'],
  },
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
  { files: typescript, rules: eslintRecommended },
  // typescript-eslint's parser, its `eslint-recommended` overrides (rules TypeScript checks
  // itself, such as no-undef, turned off) and its `recommended` rules.
  ...tseslint.configs.recommended.map((config) => ({ ...config, files: typescript })),
  {
    files: typescript,
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // As `noUnusedLocals`/`noUnusedParameters` read it: a leading underscore marks a name
      // kept on purpose, and `const { secret: _secret, ...rest } = x` is how a field is left out.
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
      // The build is CommonJS, and `require` is how a module loads lazily, on the one path
      // that needs it (Redis, the demo, graphql-jit, OpenTelemetry: a deployment's cold
      // start skips them, bench/README.md), and how tests read .cjs helpers and versions.
      '@typescript-eslint/no-require-imports': 'off',
    },
  },
  {
    files: ['{test,tools/probes,scripts,bench}/**/*.{ts,mts}'],
    rules: {
      // Tests, probes and benchmarks read GraphQL and REST answers as JSON and check their
      // shape with `expect` or by hand: `any` there is the honest type. src/ has none.
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  ...testTiming.configs,
];
