import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';

/**
 * ESLint for the tests of the project's lint setup (eslint.config.mjs, eslint-rules/): a
 * snippet linted with one rule, the tree linted where eslint.config.mjs applies that rule,
 * and snippets and files linted as `npm run lint` lints them, to show the config wires the
 * rule in.
 *
 * All of it runs in one child process per suite (test/helpers/lintChild.mjs), which loads
 * eslint.config.mjs through ESLint's own loader, as the CLI does. The config is ESM, which
 * Jest's CommonJS module system cannot load; and loading ESLint, typescript-eslint and
 * @graphql-eslint takes about 2.5 CPU-seconds, which an `eslint` process per question
 * paid each time (five of them across the three suites, beside typescript-eslint loaded
 * again in Jest for the snippets and the tree) and which the child pays once.
 */

const repoRoot = path.resolve(__dirname, '../..');

export interface LintMessage {
  ruleId: string | null;
  message: string;
  line: number;
}

export interface LintResult {
  filePath: string;
  errorCount: number;
  warningCount: number;
  messages: LintMessage[];
}

export interface Lint {
  /** What `rule` (`wfs/…`) reports in `source`, as `line: rule`. */
  snippet(rule: string, source: string, filename?: string): Promise<string[]>;
  /** What `npm run lint`'s config reports in `source`, linted as if it were `filename`. */
  asConfigured(source: string, filename: string): Promise<LintMessage[]>;
  /** What `npm run lint`'s config reports in `files` (paths from the repository's root). */
  files(files: string[]): Promise<LintResult[]>;
  /**
   * What `rule` reports over test/, in the files eslint.config.mjs applies it to, as
   * `file:line: rule`. Parsing every file takes seconds, so only files whose text has each
   * of `mentions` are linted: words without which the rule cannot report (a sleep needs
   * the word `sleep` or `setTimeout`). `read` counts the files, `linted` those of them the
   * config turns the rule on for (a config that applies the rule nowhere lints none).
   */
  tree(rule: string, mentions: RegExp[]): Promise<{ read: number; linted: number; found: string[] }>;
}

/** The suite's ESLint child: started before its tests, ended after them. */
export function useLint(): Lint {
  let child: ChildProcess | undefined;
  let stderr = '';
  let next = 0;
  const pending = new Map<number, { resolve: (value: any) => void; reject: (error: Error) => void }>();

  beforeAll(async () => {
    const started = fork(path.join(__dirname, 'lintChild.mjs'), [], {
      cwd: repoRoot,
      execPath: path.join(repoRoot, 'node_modules', '.bin', 'node'),
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    child = started;
    started.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    await new Promise<void>((resolve, reject) => {
      started.on('message', (reply: { ready?: true; id?: number; value?: unknown; error?: string }) => {
        if (reply.ready) return resolve();
        const waiting = pending.get(reply.id ?? -1);
        pending.delete(reply.id ?? -1);
        if (reply.error !== undefined) waiting?.reject(new Error(reply.error));
        else waiting?.resolve(reply.value);
      });
      started.on('exit', (code) => {
        const error = new Error(`the ESLint child exited (${code}): ${stderr}`);
        reject(error);
        for (const waiting of pending.values()) waiting.reject(error);
        pending.clear();
      });
    });
  });

  // Waited for, so that no child outlives its suite.
  afterAll(async () => {
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child?.once('exit', resolve));
    child.disconnect();
    await exited;
  });

  const ask = <T>(kind: string, question: object): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      if (!child?.connected) return reject(new Error(`the ESLint child is not running: ${stderr}`));
      const id = next++;
      pending.set(id, { resolve, reject });
      child.send({ id, kind, ...question });
    });

  return {
    snippet: (rule, source, filename = 'test/unit/snippet.test.ts') => ask('snippet', { rule, source, filename }),
    asConfigured: (source, filename) => ask('text', { source, filename }),
    files: (names) => ask('files', { names }),
    tree: (rule, mentions) => ask('tree', { rule, mentions: mentions.map(({ source, flags }) => ({ source, flags })) }),
  };
}
