import { buildSubgraphSchema } from '@apollo/subgraph';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { parse, validate } from 'graphql';
import ts from 'typescript';
import { sharedCompilerHosts } from '../helpers/sharedCompilerHosts';

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

function loadFrontendConfig(): ts.ParsedCommandLine {
  const configPath = path.join(frontendDir, 'tsconfig.json');
  const { config, error } = ts.readConfigFile(configPath, (file) => ts.sys.readFile(file));
  if (error) throw new Error(ts.flattenDiagnosticMessageText(error.messageText, '\n'));
  return ts.parseJsonConfigFileContent(config, ts.sys, frontendDir);
}

/**
 * The example client and its deliberately broken variants (beside it, served from memory,
 * so they never touch the disk): each a file of its own, in one program of the frontend
 * tsconfig, which loads lib.dom.d.ts and the graphql types once instead of once per file.
 */
const brokenClients = {
  wrongField: {
    file: path.join(frontendDir, 'broken-client-wrong-field.ts'),
    appended: 'export const wrongField = (query: LocationPickerQuery) => query.locations?.edges[0]?.node.title;',
  },
  missingVariable: {
    file: path.join(frontendDir, 'broken-client-missing-variable.ts'),
    appended: 'export const missingFirst = (request: Request) => request(ShiftsPageDocument, { after: null });',
  },
};

/** Diagnostics of that program by file ('' for those of no file), compiled on first use. */
const clientProgram = (() => {
  let byFile: Map<string, string[]> | undefined;
  return () => {
    if (byFile) return byFile;
    const { options } = loadFrontendConfig();
    const client = readFileSync(clientPath, 'utf8');
    const overrides = new Map(Object.values(brokenClients).map(({ file, appended }) => [file, `${client}\n${appended}\n`]));
    // The broken variants served from memory (test/helpers/sharedCompilerHosts.ts).
    const host = sharedCompilerHosts()(options, overrides);
    const program = ts.createProgram({ rootNames: [clientPath, ...overrides.keys()], options, host });
    byFile = new Map();
    for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
      const file = diagnostic.file ? path.resolve(diagnostic.file.fileName) : '';
      const where = diagnostic.file ? `${path.relative(repoRoot, diagnostic.file.fileName)}: ` : '';
      byFile.set(file, [...(byFile.get(file) ?? []), `${where}TS${diagnostic.code} ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`]);
    }
    return byFile;
  };
})();

/** The diagnostics of a broken variant, and those of no file (the options'). */
function brokenDiagnostics(variant: keyof typeof brokenClients): string[] {
  return [...(clientProgram().get('') ?? []), ...(clientProgram().get(brokenClients[variant].file) ?? [])];
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
    expect([...clientProgram()].filter(([file]) => !broken.has(file)).flatMap(([, found]) => found)).toEqual([]);
  });

  it('fails to compile a client that reads a field its operation did not select', () => {
    expect(brokenDiagnostics('wrongField')).toEqual([expect.stringMatching(/TS2339 Property 'title' does not exist/)]);
  });

  it('fails to compile a client that leaves out a required variable', () => {
    expect(brokenDiagnostics('missingVariable')).toEqual([expect.stringMatching(/TS2345 .*'first'/s)]);
  });
});
