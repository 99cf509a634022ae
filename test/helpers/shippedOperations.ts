import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { Kind, parse, type DocumentNode, type OperationDefinitionNode } from 'graphql';
import { EXAMPLE_QUERY } from '../../src/exampleQuery';

const repoRoot = path.resolve(__dirname, '../..');

/** One operation we ship to clients, with the variables it is estimated at. */
export interface ShippedOperation {
  readonly name: string;
  /** Where it lives, as the cost table of docs/limits.md names it. */
  readonly source: string;
  /** The operation alone, with every fragment of its document. */
  readonly document: DocumentNode;
  readonly operation: OperationDefinitionNode;
  /** Page-size (Int) variables at the largest page, 100; ids and dates a sample value; cursors absent. */
  readonly variables: Record<string, unknown>;
}

/**
 * Every operation the project ships: operations/*.graphql, the README's example
 * queries, the Relay example's compiled queries and the explorer's example query.
 */
export function shippedOperations(): ShippedOperation[] {
  const sources: Array<[string, string]> = [];
  const operationsDir = path.join(repoRoot, 'operations');
  for (const file of readdirSync(operationsDir).filter((name) => name.endsWith('.graphql')).sort()) {
    sources.push([`operations/${file}`, readFileSync(path.join(operationsDir, file), 'utf8')]);
  }
  const readme = readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
  const examples = /^## Example queries\n+```graphql\n([\s\S]*?)\n```/m.exec(readme);
  if (!examples?.[1]) throw new Error('README.md: no graphql block under "## Example queries"');
  sources.push(['README, Example queries', examples[1]]);
  const relayDir = path.join(repoRoot, 'examples', 'relay', 'src', '__generated__');
  for (const file of readdirSync(relayDir).filter((name) => name.endsWith('Query.graphql.ts')).sort()) {
    const text = /"text": ("(?:[^"\\]|\\.)*")/.exec(readFileSync(path.join(relayDir, file), 'utf8'));
    if (!text?.[1]) throw new Error(`${file}: no operation text`);
    sources.push(['examples/relay', JSON.parse(text[1]) as string]);
  }
  sources.push(['the explorer (src/exampleQuery.ts)', EXAMPLE_QUERY]);

  return sources.flatMap(([source, text]) => {
    const document = parse(text);
    const fragments = document.definitions.filter((definition) => definition.kind === Kind.FRAGMENT_DEFINITION);
    return document.definitions
      .filter((definition): definition is OperationDefinitionNode => definition.kind === Kind.OPERATION_DEFINITION)
      .map((operation) => ({
        name: operation.name?.value ?? '(anonymous)',
        source,
        document: { kind: Kind.DOCUMENT, definitions: [operation, ...fragments] } as DocumentNode,
        operation,
        variables: sampleVariables(operation),
      }));
  });
}

const SAMPLES: Readonly<Record<string, unknown>> = { Int: 100, ID: 'sample-id', DateTime: '2026-11-23T00:00:00Z' };

function sampleVariables(operation: OperationDefinitionNode): Record<string, unknown> {
  const variables: Record<string, unknown> = {};
  for (const definition of operation.variableDefinitions ?? []) {
    let type = definition.type;
    while (type.kind !== Kind.NAMED_TYPE) type = type.type;
    const sample = SAMPLES[type.name.value];
    if (sample !== undefined) variables[definition.variable.name.value] = sample;
  }
  return variables;
}
