/**
 * `npm run compose`: composes the subgraphs listed in router/supergraph.yaml (our
 * schema.graphql and the example people subgraph) with @apollo/composition and writes
 * supergraph.graphql at the repository root, the same file `rover supergraph compose
 * --config router/supergraph.yaml` produces. It exits 1 and prints the composition
 * errors when the subgraphs do not compose; hints are printed but do not fail it
 * (test/integration/composition.test.ts holds the line on hints).
 *
 *   node scripts/compose.mts [--config router/supergraph.yaml] [--out supergraph.graphql] [--check]
 *
 * --check writes nothing and exits 1 when the file on disk differs from a fresh
 * composition (for CI). An .mts file so that Node runs it directly (type stripping)
 * and TypeScript checks it as the ES module it is.
 */
import { composeServices } from '@apollo/composition';
import { parse } from 'graphql';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';

const repoRoot = path.resolve(import.meta.dirname, '..');

interface SubgraphEntry {
  name: string;
  routingUrl: string;
  schemaFile: string;
}

/** Reads the rover supergraph config; only `schema.file` sources are supported here. */
function readSupergraphConfig(configPath: string): SubgraphEntry[] {
  const config = parseYaml(readFileSync(configPath, 'utf8')) as {
    subgraphs?: Record<string, { routing_url?: string; schema?: { file?: string } }>;
  };
  const entries = Object.entries(config.subgraphs ?? {});
  if (entries.length === 0) throw new Error(`${configPath}: no subgraphs listed`);
  // Rover resolves schema files relative to the config file, and so do we.
  return entries.map(([name, subgraph]) => {
    if (!subgraph.routing_url || !subgraph.schema?.file) {
      throw new Error(`${configPath}: subgraph "${name}" needs routing_url and schema.file`);
    }
    return {
      name,
      routingUrl: subgraph.routing_url,
      schemaFile: path.resolve(path.dirname(configPath), subgraph.schema.file),
    };
  });
}

function main(): number {
  const { values } = parseArgs({
    options: {
      config: { type: 'string', default: path.join(repoRoot, 'router', 'supergraph.yaml') },
      out: { type: 'string', default: path.join(repoRoot, 'supergraph.graphql') },
      check: { type: 'boolean', default: false },
    },
  });
  const subgraphs = readSupergraphConfig(path.resolve(values.config));
  const result = composeServices(
    subgraphs.map((subgraph) => ({
      name: subgraph.name,
      url: subgraph.routingUrl,
      typeDefs: parse(readFileSync(subgraph.schemaFile, 'utf8')),
    })),
  );

  const hints = result.hints ?? [];
  for (const hint of hints) {
    process.stderr.write(`hint ${hint.definition.code}: ${hint.message}\n`);
  }
  if (result.errors) {
    process.stderr.write(`Composition failed with ${result.errors.length} error(s):\n`);
    for (const error of result.errors) {
      const code = typeof error.extensions['code'] === 'string' ? error.extensions['code'] : 'ERROR';
      process.stderr.write(`- ${code}: ${error.message}\n`);
    }
    return 1;
  }

  const names = subgraphs.map((subgraph) => subgraph.name).join(', ');
  const outPath = path.resolve(values.out);
  const relativeOut = path.relative(process.cwd(), outPath) || outPath;
  if (values.check) {
    const current = existsSync(outPath) ? readFileSync(outPath, 'utf8') : '';
    if (current !== result.supergraphSdl) {
      process.stderr.write(`${relativeOut} is out of date: run npm run compose and commit it.\n`);
      return 1;
    }
    process.stdout.write(`${relativeOut} is up to date (${names}; ${hints.length} hint(s)).\n`);
    return 0;
  }
  writeFileSync(outPath, result.supergraphSdl);
  process.stdout.write(`Composed ${names} into ${relativeOut} (${hints.length} hint(s)).\n`);
  return 0;
}

try {
  process.exitCode = main();
} catch (error) {
  process.stderr.write(`compose: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
