import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * TypeScript 7's compiler (the `typescript-7` devDependency, as `npm run typecheck` runs it)
 * over TypeScript projects of a test. A frontend project costs it a third of a CPU-second,
 * where TypeScript 5.9's JS API paid seconds to load itself and to parse lib.dom.d.ts and
 * the node_modules types (Apollo Client, React). It has no JS API: a test writes its
 * projects to disk and reads the diagnostics the CLI prints.
 *
 * The executable is started as node_modules/typescript-7/bin/tsc finds it (the platform's
 * package), not through that Node script, which costs another third of a second a run.
 */
const executable = path.join(
  path.dirname(require.resolve(`@typescript/typescript-${process.platform}-${process.arch}/package.json`, { paths: [path.dirname(require.resolve('typescript-7/package.json'))] })),
  'lib',
  process.platform === 'win32' ? 'tsc.exe' : 'tsc',
);

/**
 * Diagnostics of one `tsc -b` over the projects (paths of their tsconfig.json), by absolute
 * file ('' for those of no file, such as the options'), each as `<file name>: TS<code> <message>`
 * with a chained message's lines joined by '\n'. Build mode checks independent projects in
 * one process that parses the lib files once for all of them; a project without `noEmit`
 * writes its output as `tsc -p` would.
 */
export function typeCheck(projects: readonly string[], cwd: string): Map<string, string[]> {
  const run = spawnSync(executable, ['-b', ...projects, '--singleThreaded', '--pretty', 'false'], { cwd, encoding: 'utf8' });
  // 0: no diagnostic; 1 and 2: diagnostics (outputs skipped or not). Anything else is no answer.
  if (run.error || ![0, 1, 2].includes(run.status ?? -1) || run.stderr) throw new Error(`tsc -b failed (${run.status ?? run.signal}): ${run.error?.message ?? run.stderr}`);
  const byFile = new Map<string, string[]>();
  let last: { file: string; index: number } | undefined;
  for (const line of run.stdout.split('\n').filter((text) => text.trim() !== '')) {
    const found = /^(?:(.+)\(\d+,\d+\): )?error (TS\d+): (.*)$/.exec(line);
    if (found) {
      const file = found[1] ? path.resolve(cwd, found[1]) : '';
      const listed = byFile.get(file) ?? [];
      listed.push(`${found[1] ? `${path.basename(file)}: ` : ''}${found[2]} ${found[3]}`);
      byFile.set(file, listed);
      last = { file, index: listed.length - 1 };
    } else if (last && /^\s/.test(line)) {
      // A chained message's next line, indented.
      byFile.get(last.file)![last.index] += `\n${line.trim()}`;
    } else {
      // A line this parser does not know would otherwise pass a check for no diagnostics.
      throw new Error(`tsc -b printed an unexpected line: ${line}`);
    }
  }
  return byFile;
}

/**
 * A throwaway tree laid out as this repository around examples/frontend's project (its
 * tsconfig, extended): the given files (name to text) in examples/frontend/, a copy of
 * operations/__generated__ where their imports look, and this repository's node_modules.
 * Only the files given are the project's. Its root is TypeScript's rootDir, as the
 * repository's is (TypeScript 7 checks that every file is under it, emitting or not).
 */
export function frontendProject(repoRoot: string, files: ReadonlyMap<string, string>): { root: string; dir: string; tsconfig: string } {
  const root = mkdtempSync(path.join(tmpdir(), 'wfs-frontend-project-'));
  const dir = path.join(root, 'examples', 'frontend');
  mkdirSync(dir, { recursive: true });
  cpSync(path.join(repoRoot, 'operations', '__generated__'), path.join(root, 'operations', '__generated__'), { recursive: true, filter: (source) => !source.endsWith('.json') });
  symlinkSync(path.join(repoRoot, 'node_modules'), path.join(root, 'node_modules'), 'dir');
  for (const [name, text] of files) writeFileSync(path.join(dir, name), text);
  const tsconfig = path.join(dir, 'tsconfig.json');
  const config = { extends: path.join(repoRoot, 'examples', 'frontend', 'tsconfig.json'), compilerOptions: { rootDir: root }, files: [...files.keys()], include: [] };
  writeFileSync(tsconfig, JSON.stringify(config, null, 2));
  return { root, dir, tsconfig };
}
