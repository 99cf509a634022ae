/**
 * Writes Apollo Router's persisted query manifest (safelisting) from the persisted
 * documents the codegen client preset generated, with the same ids, so one set of ids
 * serves Apollo Router and Hive:
 *
 *   operations/__generated__/persisted-documents.json        { id: body }  (Hive: `hive app:create`)
 *   operations/__generated__/persisted-query-manifest.json   Apollo's "apollo-persisted-query-manifest" v1
 *
 * Run by `npm run codegen`; both files are committed with the rest of __generated__.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, type OperationDefinitionNode } from 'graphql';

const dir = join(import.meta.dirname, '..', 'operations', '__generated__');
const documents = JSON.parse(readFileSync(join(dir, 'persisted-documents.json'), 'utf8')) as Record<string, string>;

const operations = Object.entries(documents).map(([id, body]) => {
  const operation = parse(body).definitions.find((definition): definition is OperationDefinitionNode => definition.kind === 'OperationDefinition');
  if (!operation?.name) throw new Error(`persisted document ${id} has no named operation`);
  return { id, name: operation.name.value, type: operation.operation, body };
});
operations.sort((a, b) => a.name.localeCompare(b.name));

const manifest = { format: 'apollo-persisted-query-manifest', version: 1, operations };
writeFileSync(join(dir, 'persisted-query-manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
process.stdout.write(`Wrote ${operations.length} operations to operations/__generated__/persisted-query-manifest.json\n`);
