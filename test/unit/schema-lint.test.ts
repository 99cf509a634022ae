import { spawnSync } from 'node:child_process';
import path from 'node:path';

/**
 * Every type, field, argument, enum value and directive of our schema and of the
 * client-facing API schema has a description: @graphql-eslint's `require-description`
 * rule (eslint.config.mjs), run as `npm run lint` runs it.
 */

const repoRoot = path.resolve(__dirname, '../..');
const node = path.join(repoRoot, 'node_modules', '.bin', 'node');
const eslintBin = path.join(repoRoot, 'node_modules', 'eslint', 'bin', 'eslint.js');

interface LintMessage {
  ruleId: string | null;
  message: string;
  line: number;
}

interface LintResult {
  filePath: string;
  errorCount: number;
  warningCount: number;
  messages: LintMessage[];
}

function eslint(args: string[], input?: string): LintResult[] {
  const run = spawnSync(node, [eslintBin, '--format', 'json', ...args], { cwd: repoRoot, encoding: 'utf8', input });
  if (run.stdout.trim() === '') throw new Error(`eslint printed nothing (exit ${run.status}): ${run.stderr}`);
  return JSON.parse(run.stdout) as LintResult[];
}

describe('schema descriptions (@graphql-eslint require-description)', () => {
  it.each(['schema.graphql', 'supergraph.api.graphql'])('%s has no undocumented type, field or argument', (file) => {
    const [result] = eslint([file]);
    expect(result?.messages.map((message) => `${message.line}: ${message.message}`)).toEqual([]);
    expect({ errors: result?.errorCount, warnings: result?.warningCount }).toEqual({ errors: 0, warnings: 0 });
  });

  it('reports a type, a field and an argument without a description', () => {
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
    const [result] = eslint(['--stdin', '--stdin-filename', 'schema.graphql'], undocumented);
    expect(result?.messages.map((message) => message.ruleId)).toEqual([
      '@graphql-eslint/require-description',
      '@graphql-eslint/require-description',
      '@graphql-eslint/require-description',
    ]);
    expect(result?.messages.map((message) => message.message)).toEqual([
      expect.stringContaining('"id" in field "thing"'),
      expect.stringContaining('type "Thing"'),
      expect.stringContaining('field "id" in type "Thing"'),
    ]);
  });
});
