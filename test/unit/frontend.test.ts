import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildSchema, isAbstractType, parse, print, type OperationDefinitionNode, type SelectionNode } from 'graphql';
import { frontendProject, typeCheck } from '../helpers/nativeTypeCheck';

/**
 * What a frontend team meets, checked the way their tools check it: docs/frontend.md's
 * Apollo Client 4 snippets and examples/frontend/apollo.ts type-check; the generated
 * documents import from an ESM `nodenext` project and from a bundler project; and the
 * persisted documents manifests match the operations. TypeScript 7 checks them
 * (test/helpers/nativeTypeCheck.ts).
 */

const repoRoot = path.resolve(__dirname, '../..');
const frontendDir = path.join(repoRoot, 'examples', 'frontend');
const generatedDir = path.join(repoRoot, 'operations', '__generated__');

/** The ```ts blocks of docs/frontend.md. */
function pageSnippets(): string[] {
  const page = readFileSync(path.join(repoRoot, 'docs', 'frontend.md'), 'utf8');
  return [...page.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1]!);
}

/**
 * A throwaway project: the example project's files, a copy of the generated documents
 * in `gql/` (as a frontend keeps them), and this repository's node_modules.
 */
function projectWithGeneratedDocuments(example: string, transform: (text: string) => string = (text) => text): { dir: string; tsconfig: string } {
  const dir = mkdtempSync(path.join(tmpdir(), `wfs-frontend-${example}-`));
  cpSync(path.join(frontendDir, example), dir, { recursive: true });
  cpSync(generatedDir, path.join(dir, 'gql'), { recursive: true, filter: (source) => !source.endsWith('.json') });
  for (const file of readdirSync(path.join(dir, 'gql'))) {
    const target = path.join(dir, 'gql', file);
    writeFileSync(target, transform(readFileSync(target, 'utf8')));
  }
  symlinkSync(path.join(repoRoot, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  return { dir, tsconfig: path.join(dir, 'tsconfig.json') };
}

/** Every field of an operation as a dotted path with its arguments, sorted. */
function fieldPaths(operation: OperationDefinitionNode): string[] {
  const paths: string[] = [];
  const walk = (selections: readonly SelectionNode[], prefix: string) => {
    for (const selection of selections) {
      if (selection.kind !== 'Field') continue;
      const args = (selection.arguments ?? []).map((arg) => `${arg.name.value}:${print(arg.value)}`).sort().join(',');
      const here = `${prefix}${selection.name.value}(${args})`;
      paths.push(here);
      if (selection.selectionSet) walk(selection.selectionSet.selections, `${here}.`);
    }
  };
  walk(operation.selectionSet.selections, '');
  return paths.sort();
}

describe('for frontend teams', () => {
  const temporary: string[] = [];
  afterAll(() => {
    for (const dir of temporary) rmSync(dir, { recursive: true, force: true });
  });

  /**
   * The projects checked before any app is generated, in one run of TypeScript 7 on first
   * use: examples/frontend/apollo.ts and each ```ts block of docs/frontend.md as a file of
   * its own (`readme-snippet-<n>.ts`) beside it, in the example's tsconfig, as a frontend
   * project holds them; the generated documents in an ESM `nodenext` project, the same
   * without their .js extensions, and in a bundler project. Each project's diagnostics,
   * with those of no file or of a file under no project (the options', node_modules').
   */
  const checked = (() => {
    type Checks = Record<'page' | 'nodenext' | 'nodenextWithoutExtensions' | 'bundler', string[]>;
    let found: Checks | undefined;
    return () => {
      if (found) return found;
      const page = frontendProject(repoRoot, new Map([['apollo.ts', readFileSync(path.join(frontendDir, 'apollo.ts'), 'utf8')], ...pageSnippets().map((snippet, index): [string, string] => [snippetFile(index), snippet])]));
      const projects = {
        page: { dir: page.root, tsconfig: page.tsconfig },
        nodenext: projectWithGeneratedDocuments('esm-nodenext'),
        nodenextWithoutExtensions: projectWithGeneratedDocuments('esm-nodenext', (text) => text.replace(/(from ["']\.\/[\w-]+)\.js(["'])/g, '$1$2')),
        bundler: projectWithGeneratedDocuments('bundler'),
      };
      temporary.push(...Object.values(projects).map(({ dir }) => dir));
      const byFile = typeCheck(Object.values(projects).map(({ tsconfig }) => tsconfig), repoRoot);
      const dirs = Object.values(projects).map(({ dir }) => dir + path.sep);
      const ofNoProject = [...byFile].filter(([file]) => !dirs.some((dir) => file.startsWith(dir))).flatMap(([, listed]) => listed);
      const under = (dir: string) => [...byFile].filter(([file]) => file.startsWith(dir + path.sep)).flatMap(([, listed]) => listed);
      found = Object.fromEntries(Object.entries(projects).map(([name, { dir }]) => [name, [...ofNoProject, ...under(dir)]])) as Checks;
      return found;
    };
  })();
  const snippetFile = (index: number) => `readme-snippet-${index}.ts`;

  it('compiles examples/frontend/apollo.ts (Apollo Client 4) without a diagnostic', () => {
    const snippets = pageSnippets().map((_, index) => `${snippetFile(index)}: `);
    // Every diagnostic but the snippets' own (the next test names those): apollo.ts's, the files it imports, the options'.
    expect(checked().page.filter((found) => !snippets.some((snippet) => found.startsWith(snippet)))).toEqual([]);
  });

  it('compiles every TypeScript snippet of docs/frontend.md, with hooks from @apollo/client/react', () => {
    const snippets = pageSnippets();
    expect(snippets.length).toBeGreaterThanOrEqual(2);
    expect(snippets.join('\n')).toMatch(/from '@apollo\/client\/react'/);
    expect(snippets.join('\n')).toMatch(/relayStylePagination\(/);
    // The hooks moved in v4: importing one from the package root is an error there.
    expect(snippets.join('\n')).not.toMatch(/import \{[^}]*\buse(Query|Mutation|LazyQuery)\b[^}]*\} from '@apollo\/client'/);
    snippets.forEach((_snippet, index) => {
      expect({ index, diagnostics: checked().page.filter((found) => found.startsWith(`${snippetFile(index)}: `)) }).toEqual({ index, diagnostics: [] });
    });
  });

  it('imports the generated documents from an ESM project with nodenext resolution', () => {
    expect(checked().nodenext).toEqual([]);
  });

  it('would not without the .js extensions codegen.ts asks for (the check sees the difference)', () => {
    expect(checked().nodenextWithoutExtensions).toEqual(expect.arrayContaining([expect.stringMatching(/TS2835/)]));
  });

  it('imports the generated documents from a bundler project', () => {
    expect(checked().bundler).toEqual([]);
  });

  it("configures Apollo Client's possibleTypes with every Node implementation of the client-facing schema", () => {
    const schema = buildSchema(readFileSync(path.join(repoRoot, 'supergraph.api.graphql'), 'utf8'));
    const node = schema.getType('Node');
    if (!node || !isAbstractType(node)) throw new Error('no Node interface in supergraph.api.graphql');
    const implementations = schema.getPossibleTypes(node).map((type) => type.name).sort();
    for (const source of [pageSnippets().join('\n'), readFileSync(path.join(frontendDir, 'apollo.ts'), 'utf8')]) {
      const listed = /possibleTypes: \{ Node: \[([^\]]*)\] \}/.exec(source)?.[1];
      expect(listed?.split(',').map((name) => name.trim().replace(/'/g, '')).sort()).toEqual(implementations);
    }
  });

  /**
   * examples/frontend/app run as committed, with its codegen.ts unchanged: a copy at the
   * same place in a throwaway tree that holds the repository's supergraph.api.graphql
   * and node_modules, as this repository does. Returns the app's directory.
   */
  const generatedApp = (() => {
    let app: string | undefined;
    return () => {
      if (app) return app;
      const root = mkdtempSync(path.join(tmpdir(), 'wfs-frontend-app-'));
      temporary.push(root);
      app = path.join(root, 'examples', 'frontend', 'app');
      cpSync(path.join(frontendDir, 'app'), app, { recursive: true });
      cpSync(path.join(repoRoot, 'supergraph.api.graphql'), path.join(root, 'supergraph.api.graphql'));
      symlinkSync(path.join(repoRoot, 'node_modules'), path.join(root, 'node_modules'), 'dir');
      const node = path.join(repoRoot, 'node_modules', '.bin', 'node');
      const run = spawnSync(node, [path.join(repoRoot, 'node_modules', '@graphql-codegen', 'cli', 'cjs', 'bin.js'), '--config', 'codegen.ts'], { cwd: app, encoding: 'utf8' });
      expect({ status: run.status, stderr: run.stderr.split('\n').filter((line) => /error/i.test(line)) }).toEqual({ status: 0, stderr: [] });
      return app;
    };
  })();

  it("generates an app's own typed documents with examples/frontend/app/codegen.ts as committed (its schema path exists), which then type-check", () => {
    const config = readFileSync(path.join(frontendDir, 'app', 'codegen.ts'), 'utf8');
    const schema = /^\s*schema: '([^']+)'/m.exec(config)![1]!;
    expect(existsSync(path.resolve(frontendDir, 'app', schema))).toBe(true);
    const app = generatedApp();
    const generated = readFileSync(path.join(app, 'src', 'gql', 'graphql.ts'), 'utf8');
    expect(generated).toContain('export type AppLocationPickerQuery');
    expect(generated).toContain('headcount: number | null');
    expect([...typeCheck([path.join(app, 'tsconfig.json')], app).values()].flat()).toEqual([]);
  });

  it('writes only files git ignores when run in this repository (.gitignore names examples/frontend/app/src/gql/)', () => {
    const generated = readdirSync(path.join(generatedApp(), 'src', 'gql')).map((file) => `examples/frontend/app/src/gql/${file}`);
    expect(generated).toContain('examples/frontend/app/src/gql/graphql.ts');
    const ignored = spawnSync('git', ['check-ignore', '--no-index', ...generated], { cwd: repoRoot, encoding: 'utf8' });
    expect(ignored.stdout.trim().split('\n').sort()).toEqual([...generated].sort());
  });

  it("generates files whose imports resolve in plain Node ESM (codegen.ts's importExtension), and would not without the extension", () => {
    const app = generatedApp();
    const gql = path.join(app, 'src', 'gql');
    expect(readFileSync(path.join(gql, 'index.ts'), 'utf8')).toMatch(/from "\.\/gql\.js"/);
    // tsc as an ESM app compiles them (nodenext, "type": "module"), then plain Node imports the index.
    const out = path.join(app, 'esm');
    mkdirSync(out);
    // An ESM app: its package.json says "type": "module" (here, one beside the generated files).
    writeFileSync(path.join(gql, 'package.json'), '{ "type": "module" }');
    writeFileSync(path.join(out, 'package.json'), '{ "type": "module" }');
    // No ambient @types, as the app's tsconfig says ("types": []): this repository's node_modules
    // holds the server's (node, jest, pg and some thirty more), which an app's would not.
    const compilerOptions = { module: 'nodenext', moduleResolution: 'nodenext', target: 'ES2022', outDir: out, rootDir: gql, strict: true, skipLibCheck: true, types: [] };
    const tsconfig = path.join(app, 'tsconfig.esm.json');
    writeFileSync(tsconfig, JSON.stringify({ compilerOptions, files: readdirSync(gql).filter((file) => file.endsWith('.ts')).map((file) => path.join(gql, file)) }));
    expect([...typeCheck([tsconfig], app).values()].flat()).toEqual([]);
    const node = path.join(repoRoot, 'node_modules', '.bin', 'node');
    // The document the app's own source hands to graphql(...): the generated map must know it.
    const operation = /graphql\(`([\s\S]*?)`\)/.exec(readFileSync(path.join(app, 'src', 'LocationPicker.ts'), 'utf8'))![1]!;
    const script = `const m = await import(${JSON.stringify(path.join(out, 'index.js'))}); console.log(typeof m.graphql, m.graphql(${JSON.stringify(operation)})?.kind);`;
    const load = () => spawnSync(node, ['--input-type=module', '-e', script], { cwd: out, encoding: 'utf8' });
    const loaded = load();
    expect({ status: loaded.status, stdout: loaded.stdout.trim(), stderr: loaded.stderr.trim() }).toEqual({ status: 0, stdout: 'function Document', stderr: '' });
    // The same files with extensionless relative imports, as codegen writes them without importExtension.
    for (const file of readdirSync(out).filter((name) => name.endsWith('.js'))) {
      const target = path.join(out, file);
      writeFileSync(target, readFileSync(target, 'utf8').replace(/(from ["']\.\/[\w-]+)\.js(["'])/g, '$1$2'));
    }
    const failed = load();
    expect({ status: failed.status, error: /ERR_MODULE_NOT_FOUND/.test(failed.stderr) }).toEqual({ status: 1, error: true });
  });

  describe('persisted documents', () => {
    const hive = JSON.parse(readFileSync(path.join(generatedDir, 'persisted-documents.json'), 'utf8')) as Record<string, string>;
    const apollo = JSON.parse(readFileSync(path.join(generatedDir, 'persisted-query-manifest.json'), 'utf8')) as {
      format: string;
      version: number;
      operations: Array<{ id: string; name: string; type: string; body: string }>;
    };
    const operations = readdirSync(path.join(repoRoot, 'operations'))
      .filter((file) => file.endsWith('.graphql'))
      .map((file) => parse(readFileSync(path.join(repoRoot, 'operations', file), 'utf8')).definitions[0] as OperationDefinitionNode);

    it('lists every operation once, in both forms, with the same ids', () => {
      expect(apollo.format).toBe('apollo-persisted-query-manifest');
      expect(apollo.version).toBe(1);
      expect(apollo.operations.map((operation) => operation.name).sort()).toEqual(operations.map((operation) => operation.name!.value).sort());
      expect(Object.fromEntries(apollo.operations.map((operation) => [operation.id, operation.body]))).toEqual(hive);
    });

    it('uses the hex SHA-256 of the body as id, and the body is the operation', () => {
      for (const entry of apollo.operations) {
        expect(entry.id).toBe(createHash('sha256').update(entry.body).digest('hex'));
        const source = operations.find((operation) => operation.name!.value === entry.name)!;
        expect(entry.type).toBe(source.operation);
        // The body is normalized (fields in a fixed order, one line); it selects the same fields.
        const body = parse(entry.body).definitions[0] as OperationDefinitionNode;
        expect(fieldPaths(body)).toEqual(fieldPaths(source));
        const variables = (operation: OperationDefinitionNode) => (operation.variableDefinitions ?? []).map((definition) => print(definition)).sort();
        expect(variables(body)).toEqual(variables(source));
      }
    });

    it('embeds the same id in each generated document, where persisted-query links read it', () => {
      const generated = readFileSync(path.join(generatedDir, 'graphql.ts'), 'utf8');
      for (const entry of apollo.operations) {
        expect(generated).toContain(`export const ${entry.name}Document = {"__meta__":{"hash":"${entry.id}"}`);
      }
    });
  });
});
