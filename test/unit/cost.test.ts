import { readFileSync } from 'node:fs';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { Kind, buildSchema, getVariableValues, parse, type DocumentNode, type OperationDefinitionNode } from 'graphql';
import { loadConfig } from '../../src/config';
import { costCacheBytes, costLimit, costVariableValues, estimateCost } from '../../src/graphql/admission/cost';
import { documentBytes } from '../../src/graphql/server/documentStore';
import { DEFAULT_QUERY_LIMITS } from '../../src/graphql/admission/limits';
import { createSubgraphSchema } from '../../src/graphql/server/schema';
import { nestedBomb } from '../helpers/nestedBomb';
import { routerEstimate } from '../helpers/routerCost';
import { shippedOperations } from '../helpers/shippedOperations';

const repoRoot = path.resolve(__dirname, '../..');
const schema = createSubgraphSchema();
/** What a router reads: the committed supergraph, directives as composition kept them. */
const supergraph = buildSchema(readFileSync(path.join(repoRoot, 'supergraph.graphql'), 'utf8'));
/** router/router.yaml's `list_size`: what a router assumes for a list without @listSize. */
const ROUTER_LIST_SIZE = 100;

const operationOf = (document: DocumentNode) => document.definitions.find((definition) => definition.kind === Kind.OPERATION_DEFINITION) as OperationDefinitionNode;
const estimate = (query: string, variables: Record<string, unknown> = {}) => {
  const document = parse(query);
  return estimateCost(schema, document, operationOf(document), variables);
};

describe('cost estimate (docs/limits.md, "Query limits": the size of the answer a document can produce)', () => {
  it('counts every field once per time it can appear, a connection page-size times', () => {
    // locations 1 + 7 × (nodes 1 + id 1 + name 1)
    expect(estimate('{ locations(first: 7) { nodes { id name } } }')).toBe(1 + 7 * 3);
    // + pageInfo 1 + hasNextPage 1; edges with a cursor and a node
    expect(estimate('{ locations(last: 5) { edges { cursor node { id } } pageInfo { hasNextPage } } }')).toBe(1 + 5 * (1 + 1 + 2) + 2);
  });

  it('uses the default page size (100) when neither first nor last is given, and multiplies nested connections', () => {
    expect(estimate('{ locations { nodes { id } } }')).toBe(1 + 100 * 2);
    // locations 2 × (node 1 + shifts 1 + 3 × (node 1 + location 1 + name 1))
    expect(estimate('{ locations(first: 2) { nodes { shifts(first: 3) { nodes { location { name } } } } } }')).toBe(1 + 2 * (1 + 1 + 3 * 3));
  });

  it('lets the default budget serve one connection nested in another at default page sizes, never three', () => {
    const twoLevels = estimate('{ locations { nodes { id name shifts { nodes { id start end } } } } }');
    expect(twoLevels).toBe(1 + 100 * (1 + 2 + 1 + 100 * (1 + 3)));
    expect(twoLevels).toBeLessThanOrEqual(DEFAULT_QUERY_LIMITS.maxCost);
    expect(estimate('{ locations { nodes { shifts { nodes { location { shifts { nodes { id } } } } } } } }')).toBeGreaterThan(DEFAULT_QUERY_LIMITS.maxCost);
  });

  it("reads first/last from the operation's variables, with their defaults", () => {
    const query = 'query Q($n: Int = 4) { shifts(first: $n) { nodes { id } } }';
    expect(estimate(query, { n: 9 })).toBe(1 + 9 * 2);
    expect(estimate(query)).toBe(1 + 4 * 2);
    expect(estimate('query Q($n: Int) { shifts(last: $n) { nodes { id } } }')).toBe(1 + 100 * 2);
  });

  it('counts a page size outside 1 to 100 as at most 100 (the connection refuses it with BAD_USER_INPUT)', () => {
    expect(estimate('{ shifts(first: 100000) { nodes { id } } }')).toBe(1 + 100 * 2);
    expect(estimate('{ shifts(first: -5) { nodes { id } } }')).toBe(1);
  });

  it('expands aliases and fragments, every spread counted', () => {
    const twice = '{ a: locations(first: 2) { ...L } b: locations(first: 2) { ...L } } fragment L on LocationConnection { nodes { id } }';
    expect(estimate(twice)).toBe(2 * (1 + 2 * 2));
    expect(estimate('{ locations(first: 3) { ... on LocationConnection { nodes { ... on Location { id name } } } } }')).toBe(1 + 3 * 3);
  });

  it('counts _entities by its representations and node by its one id', () => {
    const entities = 'query E($r: [_Any!]!) { _entities(representations: $r) { ... on Location { id name } } }';
    expect(estimate(entities, { r: [1, 2, 3, 4].map((n) => ({ __typename: 'Location', id: `l${n}` })) })).toBe(4 * 3);
    expect(estimate('{ _entities(representations: [{ __typename: "Shift", id: "s1" }]) { ... on Shift { start } } }')).toBe(2);
    expect(estimate('{ node(nodeId: "x") { ... on Location { id name } } }')).toBe(3);
  });

  it('counts a single representation given where the list is expected as the list of one that execution makes of it', () => {
    const selection = '{ ... on Location { id shifts(first: 100) { nodes { id location { shifts(first: 100) { nodes { id } } } } } } }';
    const listed = estimate(`{ _entities(representations: [{ __typename: "Location", id: "loc_1" }]) ${selection} }`);
    expect(listed).toBeGreaterThan(20_000);
    expect(estimate(`{ _entities(representations: { __typename: "Location", id: "loc_1" }) ${selection} }`)).toBe(listed);
    expect(estimate(`query E($r: [_Any!]!) { _entities(representations: $r) ${selection} }`, { r: { __typename: 'Location', id: 'loc_1' } })).toBe(listed);
  });

  it('has no estimate for variables that do not coerce (execution refuses them), whatever their size', () => {
    const query = 'query Q($n: Int, $m: String) { locations(first: $n, after: $m) { pageInfo { hasNextPage } } }';
    expect(estimate(query, { n: [1, 1e20, 1e20] })).toBeUndefined();
    expect(estimate(query, { n: 1e20 })).toBeUndefined();
    expect(estimate(query, { n: 'ten' })).toBeUndefined();
    let nested: unknown = 1;
    for (let i = 0; i < 300_000; i++) nested = [nested];
    expect(estimate(query, { n: nested })).toBeUndefined();
    // The other variables are not the estimate's: a wrong $m is execution's to refuse.
    expect(estimate(query, { n: 5, m: 7 })).toBe(1 + 1 + 1);
  });

  it('reads variables anywhere inside an argument value: the issue\'s `_entities(representations: [$r])` beside the bomb counts as the bomb alone does', () => {
    const bomb = 'locations { nodes { shifts { nodes { location { shifts { nodes { id } } } } } } }';
    const alone = estimate(`{ ${bomb} }`)!;
    expect(alone).toBe(2_030_201);
    const location = { __typename: 'Location', id: 'loc_1' };
    // The finding's document: a variable as a list item (its one entity counts 1).
    expect(estimate(`query Q($r: _Any!) { _entities(representations: [$r]) { __typename } ${bomb} }`, { r: location })).toBe(alone + 1);
    // Deeper: in an object literal, in a list inside it, in an object inside that; and a list item beside literals.
    const deep = `query Q($t: String!, $id: _Any, $x: _Any!, $y: Int) {
      _entities(representations: [{ __typename: $t, id: $id, extra: [$x, { y: $y }] }, $x, { __typename: "Shift", id: "s1" }]) { __typename }
      ${bomb} }`;
    expect(estimate(deep, { t: 'Location', id: 'loc_1', x: location, y: 3 })).toBe(alone + 3);
    // A single object literal holding a variable is the list of one it was without one: 1 × (1 + name).
    expect(estimate(`query Q($id: ID!) { _entities(representations: { __typename: "Location", id: $id }) { ... on Location { name } } ${bomb} }`, { id: 'loc_1' })).toBe(alone + 2);
    // Nested variables that do not coerce: execution refuses the request before any resolver.
    expect(estimate(`query Q($r: _Any!) { _entities(representations: [$r]) { __typename } ${bomb} }`, {})).toBeUndefined();
  });

  it('counts an argument that does not coerce although its variables did at its largest: execution fails that field alone and runs the others', () => {
    const bomb = 'locations { nodes { shifts { nodes { location { shifts { nodes { id } } } } } } }';
    // `$r` is nullable with a default, so it may stand for a non-null item, and null is a value it coerces to.
    const query = `query Q($r: _Any = {}) { _entities(representations: [$r, $r]) { ... on Location { name } } ${bomb} }`;
    expect(estimate(query, { r: null })).toBe(estimate(`{ ${bomb} }`)! + 2 * 2);
    expect(estimate(query, { r: { __typename: 'Location', id: 'loc_1' } })).toBe(estimate(`{ ${bomb} }`)! + 2 * 2);
  });

  it('counts __typename, nodeId selected on the Node interface and literally skipped fields as 0', () => {
    expect(estimate('{ __typename node(nodeId: "x") { __typename nodeId } }')).toBe(1);
    expect(estimate('{ locations(first: 2) { nodes { id @skip(if: true) name @include(if: false) } } }')).toBe(1 + 2);
  });

  it('measures a fan-out of fragment spreads without expanding it (10^9 spreads, a few fragments)', () => {
    const fanOut = `{ ...F9 } ${Array.from({ length: 9 }, (_, i) => `fragment F${i + 1} on Query { ${Array.from({ length: 10 }, () => (i === 0 ? '__typename location(id: "x") { id }' : `...F${i}`)).join(' ')} }`).join(' ')}`;
    expect(estimate(fanOut)).toBe(2 * 10 ** 9);
  });

  it('puts the nested bomb of the issue at about 10^8 answer values', () => {
    expect(estimate(nestedBomb())).toBeGreaterThan(100_000_000);
  });
});

describe("the schema's cost directives give Apollo Router's static estimate our numbers", () => {
  const cases = [
    ...shippedOperations().map((op) => ({ label: `${op.name} (${op.source})`, document: op.document, operation: op.operation, variables: op.variables })),
    ...[nestedBomb(), nestedBomb((i) => `x${i}y`)].map((query, i) => {
      const document = parse(query);
      return { label: `the nested bomb ${i}`, document, operation: operationOf(document), variables: {} };
    }),
  ];

  it.each(cases)('$label', ({ document, operation, variables }) => {
    const ours = estimateCost(schema, document, operation, variables);
    expect(routerEstimate(supergraph, document, operation, variables, ROUTER_LIST_SIZE)).toBe(ours);
    // The subgraph schema as a router extracts it from the supergraph: ours, directives included.
    expect(routerEstimate(schema, document, operation, variables, ROUTER_LIST_SIZE)).toBe(ours);
  });

  it('agrees at smaller page sizes and on the filter argument too', () => {
    const query = 'query Q($n: Int!, $f: ShiftFilter) { shifts(first: $n, filter: $f) { nodes { id location { shifts(first: 3) { edges { cursor } } } } } }';
    const document = parse(query);
    for (const variables of [{ n: 20 }, { n: 1, f: { startsFrom: '2026-11-23T00:00:00Z' } }]) {
      expect(routerEstimate(supergraph, document, operationOf(document), variables, ROUTER_LIST_SIZE)).toBe(estimateCost(schema, document, operationOf(document), variables));
    }
  });
});

describe('the cost table of docs/limits.md', () => {
  it('lists the estimate of every shipped operation, as computed', () => {
    const page = readFileSync(path.join(repoRoot, 'docs', 'limits.md'), 'utf8');
    const listed = [...page.matchAll(/^\| `(\w+)` \| ([^|]+?) \| ([\d ]+) \|$/gm)].map(([, name, source, cost]) => `${name} | ${source} | ${cost!.replace(/ /g, '')}`);
    const computed = shippedOperations().map((op) => `${op.name} | ${op.source} | ${estimateCost(schema, op.document, op.operation, op.variables)}`);
    expect(listed).toEqual(computed);
  });
});

describe('WFS_MAX_COST', () => {
  it('defaults to the limits default, 50 000, and takes a positive integer', () => {
    expect(loadConfig({}).limits.query.maxCost).toBe(DEFAULT_QUERY_LIMITS.maxCost);
    expect(DEFAULT_QUERY_LIMITS.maxCost).toBe(50_000);
    expect(loadConfig({ WFS_MAX_COST: '2500' }).limits.query.maxCost).toBe(2500);
  });

  it.each(['0', '-3', 'lots', '1.5', '2000000000'])('refuses %p, naming the variable', (value) => {
    expect(() => loadConfig({ WFS_MAX_COST: value })).toThrow(/^WFS_MAX_COST: must be an integer from 1 to 1000000000/);
  });
});

describe('the cost limit keeps its estimates per operation and the variables it reads', () => {
  // One parsed document for every request, as Apollo's document cache hands it out.
  const document = parse('query Sized($n: Int = 50, $after: String) { locations(first: $n, after: $after) { nodes { id name } } }');
  const operation = operationOf(document);
  const maxCost = estimateCost(schema, document, operation, { n: 10 })!;

  it('answers each page size by its own estimate, whatever was asked before', async () => {
    // One plugin for all the checks below: the cache lives in it.
    const hooks = await costLimit(maxCost).requestDidStart!({} as never);
    const run = (variables: Record<string, unknown>) => hooks!.didResolveOperation!({ schema, document, operation, request: { variables } } as never);
    for (const after of [null, 'a', 'b']) await expect(run({ n: 10, after })).resolves.toBeUndefined();
    await expect(run({ n: 11, after: 'a' })).rejects.toThrow(/is estimated at/);
    await expect(run({ n: 10, after: 'c' })).resolves.toBeUndefined();
    // Left out, $n takes its default (50); a null one is no page size (the default page size).
    await expect(run({ after: 'a' })).rejects.toThrow(/is estimated at/);
    await expect(run({ n: null })).rejects.toThrow(/is estimated at/);
    await expect(run({ n: 10 })).resolves.toBeUndefined();
  });

  it('lets execution refuse variables that do not coerce, and answers the same values the same way afterwards', async () => {
    const hooks = await costLimit(maxCost).requestDidStart!({} as never);
    const run = (variables: Record<string, unknown>) => hooks!.didResolveOperation!({ schema, document, operation, request: { variables } } as never);
    for (let i = 0; i < 100; i++) await expect(run({ n: [i, 1e20, 1e20] })).resolves.toBeUndefined();
    // Page sizes past 100 are clamped: one key for all of them, still over the budget.
    for (const n of [101, 5_000, 2 ** 31 - 1]) await expect(run({ n })).rejects.toThrow(/is estimated at/);
    await expect(run({ n: 10 })).resolves.toBeUndefined();
  });
});

describe("the values the cost limit reads are graphql-js's coerced ones", () => {
  it('agrees with getVariableValues on page sizes and list lengths, for values of every shape', () => {
    const document = parse('query Q($n: Int, $m: Int!, $d: Int = 7, $r: [_Any!]!) { a: locations(first: $n, last: $m) { nodes { id } } b: shifts(first: $d) { nodes { id } } _entities(representations: $r) { __typename } }');
    const operation = operationOf(document);
    const samples: unknown[] = [undefined, null, 0, 5, -3, 100, 2 ** 31 - 1, 2 ** 31, -(2 ** 31), 1e20, 2.5, NaN, '7', true, [], [3], [[1]], {}, { __typename: 'Location', id: 'l1' }, [{ __typename: 'Location', id: 'l1' }, { __typename: 'Shift', id: 's1' }], [null], [{ a: 1 }, null]];
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const pick = () => samples[Math.floor(next() * samples.length)];
    const project = (values: Record<string, unknown> | undefined) =>
      values && { n: values['n'], m: values['m'], d: values['d'], r: Array.isArray(values['r']) ? values['r'].length : values['r'] };
    // Compared with node's deep equality and reported together at the end: one jest `expect` per case made this test 10 times slower.
    const disagreements: unknown[] = [];
    for (let i = 0; i < 3000; i++) {
      const inputs: Record<string, unknown> = {};
      for (const name of ['n', 'm', 'd', 'r']) {
        const value = pick();
        if (value !== undefined || next() < 0.5) inputs[name] = value;
      }
      const ours = costVariableValues(schema, document, operation, inputs);
      const theirs = getVariableValues(schema, operation.variableDefinitions!, inputs).coerced;
      // Coercion of each representation is execution's: a list graphql-js refuses for its items alone may still be measured by its length.
      if (theirs === undefined && ours !== undefined) {
        if (getVariableValues(schema, operation.variableDefinitions!.slice(0, 3), inputs).coerced === undefined) disagreements.push({ inputs, ours: project(ours), theirs: 'refused, and for $n, $m and $d alone too' });
        continue;
      }
      if (!isDeepStrictEqual(project(ours), project(theirs))) disagreements.push({ inputs, ours: project(ours), theirs: project(theirs) });
    }
    expect(disagreements).toEqual([]);
  });
});

describe('what the cost limit keeps counts against the document store', () => {
  it('adds a bound per operation to the bytes a parsed document counts', () => {
    const one = parse('query A { __typename }');
    const two = parse('query A { __typename } query B { __typename }');
    expect(costCacheBytes(one)).toBeGreaterThan(0);
    expect(costCacheBytes(two)).toBe(2 * costCacheBytes(one));
    expect(documentBytes(one)).toBeGreaterThanOrEqual(costCacheBytes(one) + one.loc!.source.body.length);
  });
});
