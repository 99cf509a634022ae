// ESLint as `npm run lint` runs it, in one child process per suite that asks
// (test/helpers/lintRules.ts starts it and says why). It loads eslint.config.mjs through
// ESLint's own config loader, as the CLI does, and answers the suite's questions over IPC:
// a snippet linted with one of the project's rules, a snippet or files linted as
// configured, and a rule run over test/ where the config applies it.
import { readdirSync, readFileSync } from 'node:fs';
import module from 'node:module';
import path from 'node:path';

// V8's code cache, as ESLint's bin keeps it: loading ESLint, typescript-eslint and
// @graphql-eslint is most of this process's work (2.6 CPU-seconds compiled afresh, 1.7
// from the cache). Kept where `npm run lint` keeps it, in the system's temporary folder
// (Jest's run points TMPDIR at a folder of its own inside it, test/helpers/runTmpdir.js),
// so a child started after the test line's lint reads what the lint compiled.
const runTmpdir = process.env.JEST_RUN_TMPDIR;
module.enableCompileCache?.(runTmpdir ? path.join(path.dirname(runTmpdir), 'node-compile-cache') : undefined);

const repoRoot = path.resolve(import.meta.dirname, '../..');
const { ESLint, Linter } = await import('eslint');
const { parser } = (await import('typescript-eslint')).default;
const testTiming = (await import('../../eslint-rules/testTiming.cjs')).default;

const eslint = new ESLint({ cwd: repoRoot });

/** What `rule` (`wfs/…`) reports in `source`, as `line: rule`. */
function snippet({ rule, source, filename }) {
  const linter = new Linter({ configType: 'flat', cwd: repoRoot });
  const config = [
    { files: ['**/*.ts'], languageOptions: { parser } },
    { files: ['**/*.ts'], plugins: { wfs: testTiming.plugin }, rules: { [rule]: 'error' } },
  ];
  const messages = linter.verify(source, config, path.join(repoRoot, filename));
  const broken = messages.find((message) => message.fatal);
  if (broken) throw new Error(`the snippet does not parse: ${broken.message}`);
  return messages.map((message) => `${message.line}: ${message.ruleId}`);
}

const summary = (messages) => messages.map(({ ruleId, message, line }) => ({ ruleId, message, line }));

/** What `npm run lint` reports in `source`, linted as if it were `filename`. */
async function text({ source, filename }) {
  const [result] = await eslint.lintText(source, { filePath: path.join(repoRoot, filename) });
  return summary(result?.messages ?? []);
}

/** What `npm run lint` reports in `files`, with its counts. */
async function files({ names }) {
  const results = await eslint.lintFiles(names);
  return results.map(({ filePath, errorCount, warningCount, messages }) => ({ filePath: path.relative(repoRoot, filePath), errorCount, warningCount, messages: summary(messages) }));
}

/** The .ts files under `directory`. */
function sources(directory) {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(directory, entry.name);
    if (entry.isDirectory()) return sources(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/**
 * What `rule` reports over test/ as `npm run lint` runs it, that rule alone, as
 * `file:line: rule`. Only files whose text has each of `mentions` (regular expressions'
 * sources and flags) are asked about; of those, the ones whose configuration from
 * eslint.config.mjs turns the rule on are linted. `read` counts the files, `linted` those.
 */
async function tree({ rule, mentions }) {
  const words = mentions.map(({ source, flags }) => new RegExp(source, flags));
  const all = sources(path.join(repoRoot, 'test'));
  const scoped = [];
  for (const file of all) {
    if (!words.every((word) => word.test(readFileSync(file, 'utf8')))) continue;
    const config = await eslint.calculateConfigForFile(file);
    const [severity] = [config?.rules?.[rule] ?? 0].flat();
    if (severity === 2 || severity === 'error') scoped.push(file);
  }
  const only = new ESLint({ cwd: repoRoot, ruleFilter: ({ ruleId }) => ruleId === rule });
  const results = scoped.length > 0 ? await only.lintFiles(scoped) : [];
  const found = results.flatMap(({ filePath, messages }) => messages.map((message) => `${path.relative(repoRoot, filePath)}:${message.line}: ${message.ruleId ?? message.message}`));
  return { read: all.length, linted: scoped.length, found };
}

const answer = { snippet, text, files, tree };

process.on('message', async ({ id, kind, ...question }) => {
  try {
    process.send({ id, value: await answer[kind](question) });
  } catch (error) {
    process.send({ id, error: String(error?.stack ?? error) });
  }
});
// The suite ends it, or ends first.
process.on('disconnect', () => process.exit(0));
process.send({ ready: true });
