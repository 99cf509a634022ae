import { buildSubgraphSchema } from '@apollo/subgraph';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { parse, validate } from 'graphql';
import ts from 'typescript';

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
 * Type-checks `fileName` with the frontend tsconfig; `overrides` serves file contents
 * from memory, so a broken variant of the client never touches the disk.
 */
function diagnosticsFor(fileName: string, overrides: ReadonlyMap<string, string> = new Map()): string[] {
  const { options } = loadFrontendConfig();
  const host = ts.createCompilerHost(options);
  const readFile = host.readFile.bind(host);
  const getSourceFile = host.getSourceFile.bind(host);
  host.fileExists = (file) => overrides.has(path.resolve(file)) || ts.sys.fileExists(file);
  host.readFile = (file) => overrides.get(path.resolve(file)) ?? readFile(file);
  host.getSourceFile = (file, languageVersion, onError, shouldCreate) => {
    const text = overrides.get(path.resolve(file));
    return text === undefined
      ? getSourceFile(file, languageVersion, onError, shouldCreate)
      : ts.createSourceFile(file, text, languageVersion, true);
  };
  const program = ts.createProgram({ rootNames: [fileName], options, host });
  return ts
    .getPreEmitDiagnostics(program)
    .map((diagnostic) => {
      const where = diagnostic.file ? `${path.relative(repoRoot, diagnostic.file.fileName)}: ` : '';
      return `${where}TS${diagnostic.code} ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`;
    });
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
    expect(diagnosticsFor(clientPath)).toEqual([]);
  });

  it('fails to compile a client that reads a field its operation did not select', () => {
    const brokenPath = path.join(frontendDir, 'broken-client.ts');
    const source = `${readFileSync(clientPath, 'utf8')}
export const wrongField = (query: LocationPickerQuery) => query.locations?.edges[0]?.node.title;
`;
    const diagnostics = diagnosticsFor(brokenPath, new Map([[brokenPath, source]]));
    expect(diagnostics).toEqual([expect.stringMatching(/TS2339 Property 'title' does not exist/)]);
  });

  it('fails to compile a client that leaves out a required variable', () => {
    const brokenPath = path.join(frontendDir, 'broken-client.ts');
    const source = `${readFileSync(clientPath, 'utf8')}
export const missingFirst = (request: Request) => request(ShiftsPageDocument, { after: null });
`;
    const diagnostics = diagnosticsFor(brokenPath, new Map([[brokenPath, source]]));
    expect(diagnostics).toEqual([expect.stringMatching(/TS2345 .*'first'/s)]);
  });
});
