import { parse, type OperationDefinitionNode } from 'graphql';
import { createSubgraphSchema } from '../../src/graphql/server/schema';
import { argumentValues, canonicalize, outsideCompiledSubset, renameKeys } from '../../src/graphql/server/canonicalOperation';

/** The canonical form graphql-jit compiles (src/graphql/server/canonicalOperation.ts). */

const schema = createSubgraphSchema();
const canonical = (text: string) => {
  const document = parse(text);
  return canonicalize(schema, document, document.definitions.find((d): d is OperationDefinitionNode => d.kind === 'OperationDefinition')!);
};

describe('canonicalize', () => {
  it('keeps none of the client text: literals, aliases, fragment, operation and variable names', () => {
    const form = canonical(
      'query Secret($who: ID! = "default-id") { mine: shift(id: $who) { id } other: location(id: "lit-1") { ...Mine name @include(if: true) } } fragment Mine on Location { id }',
    )!;
    for (const text of ['Secret', 'who', 'default-id', 'mine', 'other', 'lit-1', 'Mine', 'true']) expect(form.text).not.toContain(text);
    expect(form.text.replace(/\s+/g, ' ')).toBe('query ($a0: ID!, $a1: ID!, $a2: Boolean!) { __r0: shift(id: $a0) { id } __r1: location(id: $a1) { ...f0 name @include(if: $a2) } } fragment f0 on Location { id }');
  });

  it('gives documents that differ in literals and names one canonical text', () => {
    expect(canonical('query A { x: shift(id: "1") { id } }')!.text).toBe(canonical('query B($v: ID!) { y: shift(id: $v) { id } }')!.text);
  });

  it('declares arguments read in fragments after the operation too', () => {
    const form = canonical('query Q($n: Int) { locations(first: 1) { nodes { ...F } } } fragment F on Location { shifts(first: $n) { nodes { id } } }')!;
    expect(form.text).toMatch(/^query \(\$a0: Int, \$a1: Int\)/);
    expect(argumentValues(form.args, { n: 3 })).toEqual({ a0: 1, a1: 3 });
  });

  it('works out each argument from the coerced variables: absent leaves it out, null in a non-null one is not compiled', () => {
    const form = canonical('query Q($id: ID, $loc: ID) { shift(id: $id) { id } shifts(first: 1, filter: { locationId: $loc, startsFrom: "2026-01-01T00:00:00Z" }) { nodes { id } } }')!;
    expect(argumentValues(form.args, { loc: 'l1' })).toEqual({ a1: 1, a2: { locationId: 'l1', startsFrom: '2026-01-01T00:00:00Z' } });
    expect(argumentValues(form.args, { id: null })).toBeUndefined();
  });
});

describe('outsideCompiledSubset (what graphql-jit answers as graphql-js does)', () => {
  const outside = (text: string) => outsideCompiledSubset(schema, canonical(text)!.document);

  it('takes documents without directives whose keys with a selection are selected once, leaves repeated', () => {
    expect(outside('{ a: location(id: "1") { id name id ...F } b: location(id: "2") { ...F } } fragment F on Location { id nodeId shifts(first: 2) { nodes { id } } }')).toBeUndefined();
    // One key per runtime type: `location` under Location and under Shift never meet.
    expect(outside('{ node(nodeId: "x") { nodeId ... on Location { id location: shifts(first: 1) { nodes { id } } } ... on Shift { id location { id } } } }')).toBeUndefined();
  });

  it.each([
    ['finding 1: a skipped node beside another under one key', '{ a: shifts(first: 100) @skip(if: true) { nodes { id } } a: shifts(first: 100) { __typename } }'],
    ['finding 2: a condition on one spread of a fragment', 'query($s: Boolean!) { x: location(id: "1") { id ...F @include(if: $s) } y: location(id: "2") { id ...F } } fragment F on Location { name }'],
    ['a condition on an inline fragment', '{ location(id: "1") { ... @include(if: false) { name } } }'],
    ['a condition on a leaf', '{ location(id: "1") { name @skip(if: true) } }'],
    ['a key with a selection twice', '{ a: location(id: "1") { id } a: location(id: "1") { name } }'],
    ['a key with a selection twice through fragments', '{ location(id: "1") { ...F ... on Location { shifts(first: 1) { nodes { id } } } } } fragment F on Location { shifts(first: 1) { pageInfo { hasNextPage } } }'],
    ['a key with a selection twice for one runtime type', '{ node(nodeId: "x") { ... on Node { ... on Shift { location { id } } } ... on Shift { location { name } } } }'],
    ['introspection', '{ __schema { queryType { name } } }'],
    ['_entities, a list of promises', '{ _entities(representations: [{ __typename: "Location", id: "1" }]) { ... on Location { id } } }'],
  ])('refuses %s', (_what, text) => {
    expect(outside(text)).toEqual(expect.any(String));
  });
});

describe('renameKeys', () => {
  it('renames canonical response keys back to the aliases, at every depth, and keeps __proto__ a plain key', () => {
    const aliases = new Map([['__r0', 'first'], ['__r1', '__proto__']]);
    const renamed = renameKeys({ __r0: [{ id: 1, __r1: { x: 1 } }], id: 2 }, aliases) as Record<string, unknown>;
    expect(JSON.parse(JSON.stringify(renamed))).toEqual({ first: [{ id: 1, ['__proto__']: { x: 1 } }], id: 2 });
    expect(JSON.stringify(renamed)).toBe('{"first":[{"id":1,"__proto__":{"x":1}}],"id":2}');
  });
});
