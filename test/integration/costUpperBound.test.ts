import { Kind, parse, type OperationDefinitionNode } from 'graphql';
import { estimateCost } from '../../src/graphql/admission/cost';
import { createSubgraphSchema } from '../../src/graphql/server/schema';
import { as } from '../helpers/fixtures';
import { startTestSubgraph, type TestSubgraph } from '../helpers/subgraph';
import { seeded } from '../helpers/seeded';
import { TRACE_HEADER } from '../../src/observability/inlineTrace';

/**
 * The cost estimate (src/graphql/admission/cost.ts) is an upper bound of the answer: random
 * documents over our schema (fragments, inline fragments on Node and _Entity, aliases,
 * variables, also inside list and object literals at any depth, @include/@skip, single
 * values where lists are expected) run against the
 * emulator, and the records each answer holds are never more than its estimate.
 *
 * The test line runs one fixed seed. More: `COST_SEEDS=1000 npx jest costUpperBound`
 * runs seeds 1 to 1000; `COST_SEED=n` replays one (a failure names its seed).
 */

const FIXED_SEED = 20261124;
const DOCUMENTS_PER_SEED = 80;
const seeds = process.env.COST_SEED
  ? [Number(process.env.COST_SEED)]
  : process.env.COST_SEEDS
    ? Array.from({ length: Number(process.env.COST_SEEDS) }, (_, i) => i + 1)
    : [FIXED_SEED];

interface Ids {
  locations: Array<{ id: string; nodeId: string }>;
  shifts: Array<{ id: string; nodeId: string }>;
}

interface Generated {
  query: string;
  variables: Record<string, unknown>;
}

/**
 * One random operation over the schema, with the variables it declares, some of them
 * inside list and object literals (representations, a filter).
 */
function randomDocument(random: () => number, ids: Ids): Generated {
  const chance = (p: number) => random() < p;
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const int = (low: number, high: number) => low + Math.floor(random() * (high - low + 1));
  const definitions: string[] = [];
  const variables: Record<string, unknown> = {};
  const fragments: string[] = [];
  let names = 0;
  const variable = (type: string, value: unknown, defaultValue?: string): string => {
    const name = `v${names++}`;
    definitions.push(`$${name}: ${type}${defaultValue === undefined ? '' : ` = ${defaultValue}`}`);
    if (value !== undefined) variables[name] = value;
    return `$${name}`;
  };
  const alias = () => (chance(0.3) ? `a${names++}: ` : '');
  // Fields with arguments always get their own alias: two of them under one name would be a validation error.
  const named = () => `a${names++}: `;
  // Choices are functions: a variable is declared only when it is used.
  const directive = () =>
    pick<() => string>([
      () => '',
      () => '',
      () => '',
      () => ' @include(if: true)',
      () => ' @skip(if: false)',
      () => ' @skip(if: true)',
      () => ' @include(if: false)',
      () => ` @include(if: ${variable('Boolean!', chance(0.5))})`,
      () => ` @skip(if: ${variable('Boolean', chance(0.5) ? true : undefined, 'false')})`,
    ])();
  const size = (): string => {
    const n = int(1, 4);
    return pick<() => string>([() => `${n}`, () => variable('Int', n), () => variable('Int', undefined, `${n}`), () => variable('Int!', n)])();
  };
  const locationRepresentation = () => `{ __typename: "Location", id: "${pick(ids.locations).id}" }`;
  const shiftRepresentation = () => `{ __typename: "Shift", id: "${pick(ids.shifts).id}" }`;
  const representationValue = () => (chance(0.5) ? { __typename: 'Location', id: pick(ids.locations).id } : { __typename: 'Shift', id: pick(ids.shifts).id });
  /** A representation with variables in it, at some depth: the whole item, its id, its typename, a list or object inside it. */
  const nestedRepresentation = (): string => {
    const [typename, id] = chance(0.5) ? ['Location', pick(ids.locations).id] : ['Shift', pick(ids.shifts).id];
    return pick<() => string>([
      () => variable('_Any!', representationValue()),
      () => `{ __typename: "${typename}", id: ${variable('ID!', id)} }`,
      () => `{ __typename: ${variable('String', typename)}, id: ${variable('_Any', id)} }`,
      () => `{ __typename: "${typename}", id: "${id}", extra: [${variable('Int', int(1, 9))}, { deeper: [${variable('_Any', representationValue())}] }] }`,
    ])();
  };

  const nodeFragment = (depth: number): string => `... on Node${directive()} { nodeId ${chance(0.3) ? `... on Shift { ${shiftSelection(depth - 1)} }` : ''} }`;
  const connection = (item: (depth: number) => string, depth: number): string => {
    const parts: string[] = [];
    if (chance(0.7)) parts.push(`${alias()}nodes${directive()} { ${item(depth - 1)} }`);
    if (chance(0.4)) parts.push(`${alias()}edges { cursor node { ${item(depth - 1)} } }`);
    if (chance(0.3) || parts.length === 0) parts.push('pageInfo { hasNextPage endCursor }');
    return parts.join(' ');
  };
  const spread = (type: string, body: string): string => {
    const name = `F${fragments.length}`;
    fragments.push(`fragment ${name} on ${type} { ${body} }`);
    return `...${name}${directive()}`;
  };
  function locationSelection(depth: number): string {
    const parts = ['id'];
    if (chance(0.5)) parts.push(`${alias()}name${directive()}`);
    if (chance(0.3)) parts.push('__typename');
    if (chance(0.3)) parts.push(nodeFragment(depth));
    if (depth > 0 && chance(0.6)) {
      const args = [`first: ${size()}`];
      if (chance(0.2)) args.push(`startsFrom: "2026-01-01T00:00:00Z"`);
      parts.push(`${named()}shifts(${args.join(', ')})${directive()} { ${connection(shiftSelection, depth)} }`);
    }
    const body = parts.join(' ');
    return chance(0.2) ? spread('Location', body) : body;
  }
  function shiftSelection(depth: number): string {
    const parts = ['id'];
    if (chance(0.5)) parts.push('start end');
    if (chance(0.2)) parts.push('user { id }');
    if (chance(0.3)) parts.push(nodeFragment(depth));
    if (depth > 0 && chance(0.6)) parts.push(`${alias()}location${directive()} { ${locationSelection(depth - 1)} }`);
    const body = parts.join(' ');
    return chance(0.2) ? spread('Shift', body) : body;
  }
  const entitySelection = (depth: number) => `... on Location { ${locationSelection(depth)} } ${chance(0.7) ? `... on Shift { ${shiftSelection(depth)} }` : ''}`;

  const roots: Array<() => string> = [
    () => `${named()}locations(${pick(['first', 'last'])}: ${size()})${directive()} { ${connection(locationSelection, int(1, 3))} }`,
    () => {
      const filter = pick<() => string>([
        () => '',
        () => '',
        () => `, filter: { locationId: "${pick(ids.locations).id}" }`,
        () => `, filter: { locationId: ${variable('ID', pick(ids.locations).id)} }`,
      ])();
      return `${named()}shifts(first: ${size()}${filter}) { ${connection(shiftSelection, int(1, 3))} }`;
    },
    () => `${named()}location(id: "${pick(ids.locations).id}") { ${locationSelection(int(0, 2))} }`,
    () => `${named()}shift(id: "${pick(ids.shifts).id}") { ${shiftSelection(int(0, 2))} }`,
    () => `${named()}node(nodeId: "${pick([...ids.locations, ...ids.shifts]).nodeId}") { ${chance(0.5) ? '__typename ' : ''}${nodeFragment(2)} ${entitySelection(int(0, 2))} }`,
    // Single values where the list is expected, as literals and as variables; lists too.
    () => {
      const representations = pick([
        () => locationRepresentation(),
        () => shiftRepresentation(),
        () => `[${Array.from({ length: int(1, 3) }, () => (chance(0.5) ? locationRepresentation() : shiftRepresentation())).join(', ')}]`,
        () => variable('[_Any!]!', representationValue()),
        () => variable('[_Any!]!', Array.from({ length: int(1, 3) }, representationValue)),
        // Variables inside the literal (the estimate once lost the whole operation to these).
        () => `[${Array.from({ length: int(1, 3) }, () => nestedRepresentation()).join(', ')}]`,
        () => nestedRepresentation(),
      ])();
      return `${named()}_entities(representations: ${representations}) { ${entitySelection(int(0, 2))} }`;
    },
  ];
  const fields = Array.from({ length: int(1, 3) }, () => pick(roots)());
  const header = definitions.length > 0 ? `(${definitions.join(', ')})` : '';
  return { query: `query Random${header} { ${fields.join(' ')} } ${fragments.join(' ')}`, variables };
}

/** The records an answer holds: every object in it below `data` (pages, edges, nodes, entities, pageInfo). */
function records(data: Record<string, unknown>): number {
  const count = (value: unknown): number => {
    if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + count(item), 0);
    if (typeof value !== 'object' || value === null) return 0;
    return 1 + Object.values(value).reduce((sum: number, item) => sum + count(item), 0);
  };
  return count(data) - 1;
}

const schema = createSubgraphSchema();
let subgraph: TestSubgraph;
let ids: Ids;
let headers: Record<string, string>;

beforeAll(async () => {
  // The budget out of the way: every document runs, so its answer can be counted.
  // Compiled at the first run (src/graphql/server/execution.ts); the router's trace header runs one through graphql-js.
  subgraph = await startTestSubgraph({}, { WFS_MAX_COST: '1000000000', LOG_LEVEL: 'silent' }, { compileAfter: 0 });
  headers = as(subgraph.emulator.tenants[0]!);
  const known = await subgraph.query('{ locations(first: 5) { nodes { id nodeId } } shifts(first: 5) { nodes { id nodeId } } }', {}, headers);
  ids = { locations: known.data.locations.nodes, shifts: known.data.shifts.nodes };
});
afterAll(async () => {
  await subgraph?.close();
});

it.each(seeds)('seed %i: no answer holds more records than its estimate', async (seed) => {
  const random = seeded(seed);
  let answered = 0;
  for (let i = 0; i < DOCUMENTS_PER_SEED; i++) {
    const { query, variables } = randomDocument(random, ids);
    const document = parse(query);
    const operation = document.definitions.find((definition) => definition.kind === Kind.OPERATION_DEFINITION) as OperationDefinitionNode;
    const estimated = estimateCost(schema, document, operation, variables);
    const response = await subgraph.query(query, variables, headers);
    if (response.data === undefined || response.data === null) continue;
    answered += 1;
    const found = records(response.data);
    if (estimated === undefined || found > estimated) {
      throw new Error(`seed ${seed}, document ${i}: estimated ${estimated} < ${found} records in the answer\n${query}\n${JSON.stringify(variables)}`);
    }
  }
  // The documents must mostly run, or the check proves little.
  expect(answered).toBeGreaterThan(DOCUMENTS_PER_SEED / 2);
}, 120_000);

/**
 * The same documents answered by compiled queries (src/graphql/server/execution.ts): this
 * suite's subgraph compiles an operation at its first run, and a request carrying the
 * router's trace header runs through graphql-js (a plugin watches its fields). The
 * compiled answer, data and errors with their codes, paths and locations, must be
 * graphql-js's.
 */
it('answers every document the same once it is compiled as through graphql-js', async () => {
  const random = seeded(FIXED_SEED);
  const byPath = (errors: Array<{ path?: unknown; message: string }> = []) =>
    [...errors].sort((a, b) => `${JSON.stringify(a.path)} ${a.message}`.localeCompare(`${JSON.stringify(b.path)} ${b.message}`));
  // Cursors are sealed with a fresh nonce each time: compared as present or not.
  const unsealed = (value: unknown): unknown =>
    JSON.parse(JSON.stringify(value ?? null), (key, item: unknown) => (/^(cursor|startCursor|endCursor)$/.test(key) && typeof item === 'string' ? '<cursor>' : item));
  let compared = 0;
  for (let i = 0; i < DOCUMENTS_PER_SEED; i++) {
    const { query, variables } = randomDocument(random, ids);
    const interpreted = await subgraph.query(query, variables, { ...headers, [TRACE_HEADER]: 'ftv1' });
    const compiled = await subgraph.query(query, variables, headers);
    const context = `document ${i}\n${query}\n${JSON.stringify(variables)}`;
    expect({ context, data: unsealed(compiled.data), errors: byPath(compiled.errors), status: compiled.status }).toEqual({
      context,
      data: unsealed(interpreted.data),
      errors: byPath(interpreted.errors),
      status: interpreted.status,
    });
    if (interpreted.data) compared += 1;
  }
  expect(compared).toBeGreaterThan(DOCUMENTS_PER_SEED / 2);
}, 180_000);
