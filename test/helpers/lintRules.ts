import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Linter, type ESLint } from 'eslint';
import { parser } from 'typescript-eslint';

/**
 * ESLint's API for the tests of the project's own rules (eslint-rules/): a snippet
 * linted with one rule, the tree linted where eslint.config.mjs applies that rule, and
 * `npm run lint` itself on a snippet, to show the config wires the rule in.
 */

const repoRoot = path.resolve(__dirname, '../..');

interface RulesModule {
  plugin: ESLint.Plugin;
  configs: Linter.Config[];
}

// eslint.config.mjs loads the same CommonJS module, so the rules and where they apply
// are written once.
const testTiming = require(path.join(repoRoot, 'eslint-rules', 'testTiming.cjs')) as RulesModule;

const typescript: Linter.Config = { files: ['**/*.ts'], languageOptions: { parser } };

/** What `rule` (`wfs/…`) reports in `source`, as `line: rule`. */
export function lintSnippet(rule: string, source: string, filename = 'test/unit/snippet.test.ts'): string[] {
  const linter = new Linter({ configType: 'flat', cwd: repoRoot });
  const config: Linter.Config[] = [typescript, { files: ['**/*.ts'], plugins: { wfs: testTiming.plugin }, rules: { [rule]: 'error' } }];
  const messages = linter.verify(source, config, path.join(repoRoot, filename));
  const broken = messages.find((message) => message.fatal);
  if (broken) throw new Error(`the snippet does not parse: ${broken.message}`);
  return messages.map((message) => `${message.line}: ${message.ruleId}`);
}

/** The .ts files under `directory`. */
function sources(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(directory, entry.name);
    if (entry.isDirectory()) return sources(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/**
 * What `rule` reports over test/, in the files eslint.config.mjs applies it to, as
 * `file:line`. Parsing every file takes seconds, so only files whose text has each of
 * `mentions` are linted: words without which the rule cannot report (a sleep needs the
 * word `sleep` or `setTimeout`). `read` counts the files, `linted` those the rule ran on
 * (a rule that reports nothing, configured where `rule` is, tells).
 */
export function lintTree(rule: string, mentions: RegExp[]): { read: number; linted: number; found: string[] } {
  const scoped = testTiming.configs.filter((config) => config.rules?.[rule] !== undefined);
  const ranOn = new Set<string>();
  const probe: ESLint.Plugin = { rules: { ran: { create: (context) => (ranOn.add(context.filename), {}) } } };
  const probes = scoped.map((config): Linter.Config => ({ ...config, plugins: { probe }, rules: { 'probe/ran': 'error' } }));
  const linter = new Linter({ configType: 'flat', cwd: repoRoot });
  const files = sources(path.join(repoRoot, 'test'));
  const found: string[] = [];
  for (const file of files) {
    const source = readFileSync(file, 'utf8');
    if (!mentions.every((mention) => mention.test(source))) continue;
    for (const message of linter.verify(source, [typescript, ...scoped, ...probes], file)) found.push(`${path.relative(repoRoot, file)}:${message.line}: ${message.ruleId ?? message.message}`);
  }
  return { read: files.length, linted: ranOn.size, found };
}

/** The rule ids `npm run lint`'s config reports in `source`, linted as if it were `filename`. */
export function lintAsConfigured(source: string, filename: string): Array<string | null> {
  const node = path.join(repoRoot, 'node_modules', '.bin', 'node');
  const eslintBin = path.join(repoRoot, 'node_modules', 'eslint', 'bin', 'eslint.js');
  const run = spawnSync(node, [eslintBin, '--format', 'json', '--stdin', '--stdin-filename', filename], { cwd: repoRoot, encoding: 'utf8', input: source });
  if (run.stdout.trim() === '') throw new Error(`eslint printed nothing (exit ${run.status}): ${run.stderr}`);
  const [result] = JSON.parse(run.stdout) as Array<{ messages: Array<{ ruleId: string | null }> }>;
  return result?.messages.map((message) => message.ruleId) ?? [];
}
