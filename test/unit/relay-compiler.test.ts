import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stripVTControlCharacters } from 'node:util';

/**
 * The Relay example (examples/relay/) compiles with the real relay-compiler (its npm
 * package ships the platform binary, so this runs offline) against the committed
 * client-facing schema, supergraph.api.graphql: pagination fragments on `locations`
 * and `shifts`, `@refetchable` fragments on `Location` and `Shift` (which need the
 * `Node` interface and `node(nodeId:)`). `--validate` also fails when the committed
 * artifacts in examples/relay/src/__generated__ are stale. A frontend copies the
 * configuration docs/frontend.md shows into a project that has no artifacts yet: that must work too,
 * against the router's schema and against the subgraph's own (the demo's).
 */

const repoRoot = path.resolve(__dirname, '../..');
const exampleDir = path.join(repoRoot, 'examples', 'relay');
/**
 * The platform's binary, as the package's own index.js resolves it: what `npx relay-compiler`
 * runs (its cli.js starts a Node process only to spawn this with the same arguments).
 */
const relayCompiler = require('relay-compiler') as string | null;

function compile(cwd: string, args: string[] = []) {
  if (!relayCompiler) throw new Error(`relay-compiler ships no binary for ${process.platform} (${process.arch})`);
  const run = spawnSync(relayCompiler, args, { cwd, encoding: 'utf8' });
  // The compiler colours its log lines; strip the escapes to read them.
  const output = stripVTControlCharacters(`${run.stdout}${run.stderr}`);
  return { status: run.status, output };
}

describe('relay-compiler on examples/relay', () => {
  it('compiles every document with no error, and the committed artifacts are up to date', () => {
    const { status, output } = compile(exampleDir, ['--validate']);
    expect({ status, errors: output.split('\n').filter((line) => line.includes('[ERROR]')) }).toEqual({ status: 0, errors: [] });
    const counts = /compiled documents: (\d+) reader, (\d+) normalization, (\d+) operation text/.exec(output);
    expect(counts).not.toBeNull();
    // 6 fragments + 3 refetch/pagination queries + the subscription as readers; AppQuery, the 4 generated queries and the subscription normalize.
    expect(counts?.slice(1).map(Number)).toEqual([12, 7, 14]);
  });

  it('uses the configuration docs/frontend.md shows, word for word', () => {
    const page = readFileSync(path.join(repoRoot, 'docs', 'frontend.md'), 'utf8');
    const start = page.indexOf('\n## Relay');
    const section = page.slice(start, page.indexOf('\n## ', start + 1));
    const shown = /```json\n([\s\S]*?)```/.exec(section)![1]!;
    expect(JSON.parse(shown)).toEqual(JSON.parse(readFileSync(path.join(exampleDir, 'relay.config.json'), 'utf8')));
  });

  it.each(['supergraph.api.graphql', 'schema.api.graphql'])(
    'compiles a fresh copy with no __generated__ directory yet against %s, writing the committed artifacts',
    (schemaFile) => {
      const work = mkdtempSync(path.join(tmpdir(), 'wfs-relay-fresh-'));
      try {
        cpSync(path.join(exampleDir, 'src'), path.join(work, 'src'), { recursive: true, filter: (source) => !source.includes('__generated__') });
        const config = JSON.parse(readFileSync(path.join(exampleDir, 'relay.config.json'), 'utf8')) as Record<string, unknown>;
        writeFileSync(path.join(work, 'relay.config.json'), JSON.stringify({ ...config, schema: path.join(repoRoot, schemaFile) }));
        const { status, output } = compile(work);
        expect({ status, errors: output.split('\n').filter((line) => line.includes('[ERROR]')) }).toEqual({ status: 0, errors: [] });
        const committed = path.join(exampleDir, 'src', '__generated__');
        const files = readdirSync(committed).sort();
        expect(readdirSync(path.join(work, 'src', '__generated__')).sort()).toEqual(files);
        for (const file of files) expect(readFileSync(path.join(work, 'src', '__generated__', file), 'utf8')).toBe(readFileSync(path.join(committed, file), 'utf8'));
      } finally {
        rmSync(work, { recursive: true, force: true });
      }
    },
  );

  it.each([
    ['LocationCardRefetchQuery', 'LocationCard_location on Location'],
    ['ShiftCardRefetchQuery', 'ShiftCard_shift on Shift'],
  ])('%s refetches through node(nodeId: $nodeId) and selects nodeId', (query, fragment) => {
    const artifact = readFileSync(path.join(exampleDir, 'src', '__generated__', `${query}.graphql.ts`), 'utf8');
    expect(artifact).toContain('node(nodeId: $nodeId)');
    expect(artifact).toContain(`fragment ${fragment} {`);
    expect(artifact).toMatch(/"text": "query [^"]*\$nodeId: ID!/);
  });

  it('refuses @refetchable on a type that is not a Node (the error the issue reported)', () => {
    const work = mkdtempSync(path.join(tmpdir(), 'wfs-relay-'));
    try {
      mkdirSync(path.join(work, 'src', '__generated__'), { recursive: true });
      const config = JSON.parse(readFileSync(path.join(exampleDir, 'relay.config.json'), 'utf8')) as Record<string, unknown>;
      writeFileSync(path.join(work, 'relay.config.json'), JSON.stringify({ ...config, schema: path.join(repoRoot, 'supergraph.api.graphql') }));
      writeFileSync(
        path.join(work, 'src', 'Broken.ts'),
        "import { graphql } from 'relay-runtime';\nexport const f = graphql`fragment Broken_pageInfo on PageInfo @refetchable(queryName: \"BrokenRefetchQuery\") { hasNextPage }`;\n",
      );
      const { status, output } = compile(work);
      expect(status).not.toBe(0);
      expect(output).toContain('@refetchable');
      expect(output).toContain('Node');
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});
