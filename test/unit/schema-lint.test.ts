import { readFileSync } from 'node:fs';
import path from 'node:path';
import { useLint } from '../helpers/lintRules';

/**
 * Every type, field, argument, enum value and directive of our schema and of the
 * client-facing API schema has a description: @graphql-eslint's `require-description`
 * rule (eslint.config.mjs), run as `npm run lint` runs it (ESLint's API with the config
 * loaded as the CLI loads it, in one child process for the suite: test/helpers/lintRules.ts).
 * And the folders of TypeScript `npm run lint` names, each linted with the recommended rules.
 */

const lint = useLint();

describe('schema descriptions (@graphql-eslint require-description)', () => {
  it.each(['schema.graphql', 'supergraph.api.graphql'])('%s has no undocumented type, field or argument', async (file) => {
    const [result] = await lint.files([file]);
    expect(result?.messages.map((message) => `${message.line}: ${message.message}`)).toEqual([]);
    expect({ errors: result?.errorCount, warnings: result?.warningCount }).toEqual({ errors: 0, warnings: 0 });
  });

  it('reports a type, a field and an argument without a description', async () => {
    const undocumented = [
      '"Documented."',
      'type Query {',
      '  "Documented."',
      '  thing(id: ID!): Thing',
      '}',
      'type Thing {',
      '  id: ID!',
      '}',
    ].join('\n');
    const messages = await lint.asConfigured(undocumented, 'schema.graphql');
    expect(messages.map((message) => message.ruleId)).toEqual([
      '@graphql-eslint/require-description',
      '@graphql-eslint/require-description',
      '@graphql-eslint/require-description',
    ]);
    expect(messages.map((message) => message.message)).toEqual([
      expect.stringContaining('"id" in field "thing"'),
      expect.stringContaining('type "Thing"'),
      expect.stringContaining('field "id" in type "Thing"'),
    ]);
  });
});

describe("npm run lint's reach", () => {
  const command = (JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as { scripts: { lint: string } }).scripts.lint;

  // router/ holds TypeScript the gateways load (Hive Gateway's config and response-cache
  // plugin): type-checked with the rest, so linted with the rest.
  it.each(['src', 'test', 'scripts', 'bench', 'router'])('lints the TypeScript of %s/ with the recommended rules', async (folder) => {
    expect(command.split(' ')).toContain(folder);
    const messages = await lint.asConfigured('const unused = 1;\n', `${folder}/reach.ts`);
    expect(messages.map((message) => message.ruleId)).toEqual(['@typescript-eslint/no-unused-vars']);
  });

  it('finds nothing in router/', async () => {
    const results = await lint.files(['router']);
    expect(results.map((result) => result.filePath).sort()).toEqual(['router/gateway.config.ts', 'router/hiveResponseCache.ts']);
    expect(results.flatMap((result) => result.messages.map((message) => `${result.filePath}:${message.line}: ${message.message}`))).toEqual([]);
  });
});
