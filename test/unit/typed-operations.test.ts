import { buildSubgraphSchema } from '@apollo/subgraph';
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { parse, validate } from 'graphql';
import { frontendProject, typeCheck } from '../helpers/nativeTypeCheck';

/**
 * Frontend teams consume operations/__generated__ (TypedDocumentNodes from the codegen
 * client preset). examples/frontend/client.ts stands in for their code: compiling it
 * here means a schema change that breaks an operation, or changes a type an
 * operation returns, breaks our build before it breaks theirs.
 */

const repoRoot = path.resolve(__dirname, '../..');
const frontendDir = path.join(repoRoot, 'examples', 'frontend');
const clientPath = path.join(frontendDir, 'client.ts');
const operationsDir = path.join(repoRoot, 'operations');

/**
 * The example client and its deliberately broken variants beside it, each a file of its
 * own in one project of the frontend tsconfig (test/helpers/nativeTypeCheck.ts), which
 * loads lib.dom.d.ts and the graphql types once instead of once per file.
 */
const brokenClients = {
  wrongField: {
    file: 'broken-client-wrong-field.ts',
    appended: 'export const wrongField = (query: LocationPickerQuery) => query.locations?.edges[0]?.node.title;',
  },
  missingVariable: {
    file: 'broken-client-missing-variable.ts',
    appended: 'export const missingFirst = (request: Request) => request(ShiftsPageDocument, { after: null });',
  },
};

/** Diagnostics of that project by file, relative to examples/frontend ('' for those of no file), checked on first use. */
const clientProject = (() => {
  let byName: Map<string, string[]> | undefined;
  return () => {
    if (byName) return byName;
    const client = readFileSync(clientPath, 'utf8');
    const variants = Object.values(brokenClients).map(({ file, appended }): [string, string] => [file, `${client}\n${appended}\n`]);
    const project = frontendProject(repoRoot, new Map([['client.ts', client], ...variants]));
    try {
      byName = new Map();
      for (const [file, found] of typeCheck([project.tsconfig], project.root)) {
        const name = file && path.relative(project.dir, file);
        byName.set(name, [...(byName.get(name) ?? []), ...found]);
      }
    } finally {
      rmSync(project.root, { recursive: true, force: true });
    }
    return byName;
  };
})();

/** The diagnostics of a broken variant, and those of no file (the options'). */
function brokenDiagnostics(variant: keyof typeof brokenClients): string[] {
  return [...(clientProject().get('') ?? []), ...(clientProject().get(brokenClients[variant].file) ?? [])];
}

describe('typed operations for frontends', () => {
  it('generates a TypedDocumentNode for every operation in operations/', () => {
    const generated = readFileSync(path.join(operationsDir, '__generated__', 'graphql.ts'), 'utf8');
    const names = readdirSync(operationsDir)
      .filter((file) => file.endsWith('.graphql'))
      .map((file) => path.basename(file, '.graphql'));
    expect(names).toEqual(expect.arrayContaining(['LocationPicker', 'WeekRota', 'ShiftsPage']));
    for (const name of names) {
      expect(generated).toContain(`export const ${name}Document = `);
    }
  });

  it('validates every operation against schema.graphql', () => {
    const schema = buildSubgraphSchema(parse(readFileSync(path.join(repoRoot, 'schema.graphql'), 'utf8')));
    for (const file of readdirSync(operationsDir).filter((name) => name.endsWith('.graphql'))) {
      const errors = validate(schema, parse(readFileSync(path.join(operationsDir, file), 'utf8')));
      expect({ file, errors: errors.map((error) => error.message) }).toEqual({ file, errors: [] });
    }
  });

  it('compiles the example frontend client without a single diagnostic', () => {
    const broken = new Set(Object.values(brokenClients).map(({ file }) => file));
    // Every diagnostic but the broken variants' own: client.ts's, the files it imports, the options'.
    expect([...clientProject()].filter(([name]) => !broken.has(name)).flatMap(([, found]) => found)).toEqual([]);
  });

  it('fails to compile a client that reads a field its operation did not select', () => {
    expect(brokenDiagnostics('wrongField')).toEqual([expect.stringMatching(/TS2339 Property 'title' does not exist/)]);
  });

  it('fails to compile a client that leaves out a required variable', () => {
    // TypeScript 7 names the missing property (TS2741) where 5.9 named the argument (TS2345) with this as its reason.
    expect(brokenDiagnostics('missingVariable')).toEqual([expect.stringMatching(/TS2741 Property 'first' is missing/)]);
  });
});
