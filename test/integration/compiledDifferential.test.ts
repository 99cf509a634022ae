import {
  execute,
  getNamedType,
  getOperationAST,
  isAbstractType,
  isInterfaceType,
  isLeafType,
  isNonNullType,
  isObjectType,
  parse,
  validate,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLArgument,
  type GraphQLError,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLObjectType,
  type GraphQLSchema,
} from 'graphql';
import { createContext, type ContextServices, type GraphQLContext } from '../../src/graphql/data/context';
import type { CursorCodec, CursorPosition } from '../../src/graphql/data/cursor';
import { encodeNodeId } from '../../src/graphql/data/node';
import { badUserInput, graphQLError } from '../../src/graphql/errors';
import { CompiledExecution } from '../../src/graphql/server/execution';
import { createSubgraphSchema } from '../../src/graphql/server/schema';
import type { ListPage, WfsClient } from '../../src/upstream/client';
import { UpstreamError } from '../../src/upstream/errors';
import { EntityIndexes } from '../../src/upstream/reading/entityIndex';
import { CallBudget } from '../../src/upstream/resilience/callBudget';
import { RESOURCES, ResourceSet, type AnyResource, type UpstreamRecord } from '../../src/upstream/resources';
import { seeded } from '../helpers/seeded';

/**
 * Compiled execution answers as graphql-js does (src/graphql/server/execution.ts): random
 * documents over `schema.graphql` (response keys selected again and again, fragments
 * spread in several places, inline fragments on objects, interfaces and unions, nested
 * `@skip`/`@include` with literals and variables, `node`, `_entities`, arguments as
 * literals and as variables, invalid cursors and page sizes), each run twice after
 * parsing and validation, as Apollo Server runs it: through CompiledExecution's executor
 * compiling at the first run (a document outside the compiled subset, or whose compiled
 * answer has errors, is answered by graphql-js), and through graphql-js's `execute`.
 * Data (key order included) and errors (message, locations, path, extensions, and the
 * class and message of what was thrown) must be identical. About half the documents
 * are written for the compiled subset (no directives, a key with a selection once).
 *
 * The data comes from the real resolvers, loaders, connections and entity index over an
 * in-process upstream (a fake WfsClient) that answers errors (unavailable, forbidden, a
 * bad response, no tenant) and nulls (missing references, records that break a non-null
 * field or a scalar, an item skipped), by tenant, so every answer is deterministic.
 *
 * The test line runs one fixed seed. More: `DIFF_SEEDS=20 npx jest compiledDifferential`
 * runs seeds 1 to 20; `DIFF_SEED=n` replays one (a difference names its seed);
 * `DIFF_REPORT=1` prints what each seed generated.
 */

const FIXED_SEED = 20261127;
const DOCUMENTS_PER_SEED = 1200;
const seeds = process.env.DIFF_SEED
  ? [Number(process.env.DIFF_SEED)]
  : process.env.DIFF_SEEDS
    ? Array.from({ length: Number(process.env.DIFF_SEEDS) }, (_, i) => i + 1)
    : [FIXED_SEED];

// The upstream's data: six locations (one that breaks Location.name, one whose name is
// no string), forty shifts with missing and unreadable times, references to locations
// that do not exist, users and open shifts.
const LOCATION_IDS = ['loc_1', 'loc_2', 'loc_3', 'loc_4', 'loc_null_name', 'loc_odd_name'];
const SHIFT_IDS = Array.from({ length: 40 }, (_, i) => `sh_${i + 1}`);

function rawLocation(id: string): unknown {
  if (id === 'loc_null_name') return { id, name: null };
  if (id === 'loc_odd_name') return { id, name: { first: 'odd' } };
  return { id, name: `Location ${id}` };
}

function rawShift(id: string, i: number): unknown {
  const day = String(1 + (i % 28)).padStart(2, '0');
  return {
    id,
    start: i % 9 === 4 ? null : i % 11 === 6 ? 'not a date' : `2026-11-${day}T09:00:00+01:00`,
    end: i % 7 === 3 ? null : `2026-11-${day}T17:00:00+01:00`,
    location: i % 13 === 5 ? 'loc_gone' : LOCATION_IDS[i % LOCATION_IDS.length],
    user: i % 3 === 0 ? null : `user_${i % 5}`,
  };
}

/** Records as the upstream client hands them on; the two odd locations skip the mapper, as a mapper bug would. */
function records(resource: AnyResource): ReadonlyArray<UpstreamRecord> {
  if (resource.name === 'locations') return LOCATION_IDS.map((id) => (id === 'loc_null_name' || id === 'loc_odd_name' ? rawLocation(id) : resource.map(rawLocation(id))) as UpstreamRecord);
  const shifts = SHIFT_IDS.map((id, i) => resource.map(rawShift(id, i)) as UpstreamRecord);
  // An item without an id: skipped, with an error for it beside the answer's own (the context's item errors).
  shifts.splice(7, 0, resource.map({ start: '2026-11-08T09:00:00+01:00' }) as UpstreamRecord);
  return shifts;
}

/** The tenants: one served, and one each whose shifts are unavailable, whose locations come back unreadable, or who may not read shifts. */
const TENANTS = ['ok', 'ok', 'ok', 'ok', 'shifts-down', 'locations-bad', 'no-shifts-scope', ''] as const;

const fakeClient = {
  budgetFor: (signal: AbortSignal) => new CallBudget(1_000, signal),
  async authorize(tenantId: string, resource: AnyResource): Promise<void> {
    if (resource.scope && tenantId === 'no-shifts-scope') throw new UpstreamError('FORBIDDEN', `reading ${resource.name} needs the scope "${resource.scope}"`);
  },
  async listPage(tenantId: string, resource: AnyResource, options: { ref?: string | null; pageSize?: number }): Promise<ListPage<UpstreamRecord>> {
    await fakeClient.authorize(tenantId, resource);
    if (tenantId === 'shifts-down' && resource.name === 'shifts') throw new UpstreamError('UPSTREAM_UNAVAILABLE', 'the upstream answered 503 for shifts');
    if (tenantId === 'locations-bad' && resource.name === 'locations') throw new UpstreamError('UPSTREAM_BAD_RESPONSE', 'the locations response is not a list envelope');
    const pageSize = options.pageSize ?? 100;
    const offset = options.ref ? Number(options.ref) : 0;
    const all = records(resource);
    const items = all.slice(offset, offset + pageSize);
    const hasMore = offset + pageSize < all.length;
    return { ref: options.ref ?? null, pageSize, items, hasMore, next: hasMore ? String(offset + pageSize) : null, previous: offset > 0 ? String(Math.max(0, offset - pageSize)) : null };
  },
};

/** Cursors without the real codec's random nonce, so that both answers carry the same ones. */
const plainCursors = {
  encode: (tenantId: string, list: string, position: CursorPosition, scope = '') => Buffer.from(JSON.stringify([tenantId, list, scope, position])).toString('base64url'),
  decode(cursor: string, tenantId: string, list: string, argument: 'after' | 'before', scope = ''): CursorPosition {
    try {
      const [t, l, s, position] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [string, string, string, CursorPosition];
      if (t === tenantId && l === list && s === scope && typeof position === 'object' && position !== null) return position;
    } catch {
      // not one of ours: refused below
    }
    throw badUserInput(`"${argument}" is not a cursor issued by this server for ${list} of this tenant`);
  },
} as unknown as CursorCodec;

/** A fresh context over fresh indexes for every request, so that the two runs of a document see the same upstream. */
function contextFor(tenant: string): GraphQLContext {
  const services: ContextServices = {
    client: fakeClient as unknown as WfsClient,
    indexes: new EntityIndexes({ sweepEveryMs: 0 }),
    cursors: plainCursors,
    resources: new ResourceSet(RESOURCES),
    identify: async () => {
      if (!tenant) throw graphQLError('UNAUTHENTICATED', 'send an Authorization: Bearer token that names your tenant');
      return tenant;
    },
  };
  return createContext(services, {}, new AbortController().signal);
}


interface Generated {
  readonly query: string;
  readonly variables: Record<string, unknown>;
  readonly tenant: string;
}

/** Where the generator takes its argument values from. */
interface Values {
  readonly cursors: readonly string[];
}

/**
 * One random query over the schema, type by type: each selection set gets fields (some
 * under a response key used again), inline fragments and spreads (new fragments, or
 * ones spread elsewhere already), each perhaps under `@skip`/`@include`.
 */
function randomDocument(schema: GraphQLSchema, random: () => number, values: Values): Generated {
  const chance = (p: number) => random() < p;
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const int = (low: number, high: number) => low + Math.floor(random() * (high - low + 1));
  const definitions: string[] = [];
  const variables: Record<string, unknown> = {};
  const fragments: Array<{ name: string; on: GraphQLNamedType; text: string }> = [];
  let names = 0;
  let fragmentNames = 0;
  const variable = (type: string, value: unknown, defaultValue?: string): string => {
    const name = `v${names++}`;
    definitions.push(`$${name}: ${type}${defaultValue === undefined ? '' : ` = ${defaultValue}`}`);
    if (value !== undefined) variables[name] = value;
    return `$${name}`;
  };
  const condition = (): string => {
    const value = chance(0.5);
    return pick<() => string>([
      () => `${value}`,
      () => variable('Boolean!', value),
      () => variable('Boolean', chance(0.5) ? value : undefined, `${!value}`),
    ])();
  };
  // About half the documents are written for the compiled subset: no directives, a key with a selection used once.
  const forSubset = chance(0.5);
  const directives = (): string => {
    if (forSubset || !chance(0.18)) return '';
    if (chance(0.15)) return ` @skip(if: ${condition()}) @include(if: ${condition()})`;
    return chance(0.5) ? ` @skip(if: ${condition()})` : ` @include(if: ${condition()})`;
  };
  const nodeIds = [...LOCATION_IDS.map((id) => encodeNodeId('Location', id)), ...SHIFT_IDS.slice(0, 6).map((id) => encodeNodeId('Shift', id)), encodeNodeId('Location', 'loc_gone'), encodeNodeId('User', 'user_1'), 'not-a-node-id'];
  const representation = () =>
    pick([
      () => ({ __typename: 'Location', id: pick([...LOCATION_IDS, 'loc_gone']) }),
      () => ({ __typename: 'Shift', id: pick([...SHIFT_IDS.slice(0, 8), 'sh_gone']) }),
      () => ({ __typename: 'User', id: 'user_1' }),
    ])();
  /** A value for one argument, as a JavaScript value; undefined leaves the argument out. */
  const valueFor = (field: string, arg: GraphQLArgument): unknown => {
    const required = isNonNullType(arg.type);
    if (!required && arg.name !== 'first' && chance(0.35)) return undefined;
    switch (arg.name) {
      case 'first':
        // A page size nearly always: a default page of each nested connection would make answers large and the test slow.
        return chance(0.93) ? int(1, 3) : pick([0, 101, null]);
      case 'last':
        return chance(0.8) ? undefined : chance(0.8) ? int(1, 3) : pick([0, 101]);
      case 'after':
      case 'before':
        return chance(0.6) && values.cursors.length > 0 ? pick(values.cursors) : pick(['nope', null]);
      case 'startsFrom':
      case 'startsBefore':
        return pick(['2026-11-03T00:00:00+01:00', '2026-11-20T00:00:00Z', null]);
      case 'filter':
        return chance(0.2) ? null : { ...(chance(0.6) && { locationId: pick([...LOCATION_IDS, 'loc_gone']) }), ...(chance(0.3) && { startsFrom: '2026-11-05T00:00:00+01:00' }) };
      case 'id':
        return field === 'location' ? pick([...LOCATION_IDS, 'loc_gone']) : pick([...SHIFT_IDS.slice(0, 8), 'sh_gone']);
      case 'nodeId':
        return pick(nodeIds);
      case 'representations':
        return Array.from({ length: int(1, 3) }, representation);
      default:
        return undefined;
    }
  };
  const literal = (value: unknown): string => {
    if (value === null) return 'null';
    if (Array.isArray(value)) return `[${value.map(literal).join(', ')}]`;
    if (typeof value === 'object') return `{ ${Object.entries(value as object).map(([k, v]) => `${k}: ${literal(v)}`).join(', ')} }`;
    return JSON.stringify(value);
  };
  /** Arguments of one field: often the same for the field (so a key selected again merges), as literals or variables. */
  const argumentsOf = (field: GraphQLField<unknown, unknown>): string => {
    if (field.args.length === 0) return '';
    const standard = chance(0.5);
    const parts: string[] = [];
    for (const arg of field.args) {
      if (standard) {
        if (arg.name === 'first') parts.push('first: 2');
        else if (isNonNullType(arg.type)) parts.push(`${arg.name}: ${literal(arg.name === 'id' ? (field.name === 'location' ? 'loc_1' : 'sh_1') : arg.name === 'nodeId' ? nodeIds[0] : [{ __typename: 'Location', id: 'loc_2' }])}`);
        continue;
      }
      const value = valueFor(field.name, arg);
      if (value === undefined) continue;
      parts.push(`${arg.name}: ${chance(0.3) ? variable(String(arg.type as GraphQLInputType), value) : literal(value)}`);
    }
    return parts.length > 0 ? `(${parts.join(', ')})` : '';
  };
  const responseKey = (field: string): string => (chance(0.6) ? '' : `${pick(['k', 'k', 'j'])}${field.replace(/^_+/, '')}: `);

  /** Selections written so far: a document stops growing at MAX_SELECTIONS (leaves only from there). */
  let selections = 0;

  /** A selection set for a value of `type`, `depth` levels of objects left below it. */
  function selectionSet(type: GraphQLNamedType, depth: number): string {
    const parts: string[] = [];
    const count = int(1, 4);
    for (let i = 0; i < count; i++) parts.push(selection(type, depth));
    // Often a key selected before, again, with another selection below it.
    if (!forSubset && chance(0.25)) parts.push(selection(type, depth));
    return `{ ${parts.join(' ')} }`;
  }

  function selection(type: GraphQLNamedType, depth: number): string {
    if (++selections > MAX_SELECTIONS) return field(type, 0);
    const roll = random();
    if (roll < 0.15) return inline(type, depth);
    if (roll < 0.3) return spread(type, depth);
    return field(type, depth);
  }

  /** A type an inline fragment or a fragment in a selection on `type` may name. */
  function fragmentType(type: GraphQLNamedType): GraphQLNamedType {
    if (isAbstractType(type)) return chance(0.2) ? type : pick(schema.getPossibleTypes(type));
    if (isObjectType(type) && type.getInterfaces().length > 0 && chance(0.3)) return pick(type.getInterfaces());
    return type;
  }

  function inline(type: GraphQLNamedType, depth: number): string {
    const on = fragmentType(type);
    const head = on === type && chance(0.3) ? '...' : `... on ${on.name}`;
    return `${head}${directives()} ${selectionSet(on, depth)}`;
  }

  /** A spread of a fragment spread elsewhere already, or of a new one. */
  function spread(type: GraphQLNamedType, depth: number): string {
    const on = fragmentType(type);
    const existing = fragments.filter((fragment) => fragment.on === on);
    if (existing.length > 0 && chance(0.6)) return `...${pick(existing).name}${directives()}`;
    const name = `F${fragmentNames++}`;
    // Written before it is listed: a fragment spreads only fragments listed before it, so none spreads itself.
    const text = selectionSet(on, Math.max(0, depth - 1));
    fragments.push({ name, on, text });
    return `...${name}${directives()}`;
  }

  function field(type: GraphQLNamedType, depth: number): string {
    if (!isObjectType(type) && !isInterfaceType(type)) return '__typename';
    const fields = Object.values(type.getFields()).filter((f) => !f.name.startsWith('_') || f.name === '_entities');
    const candidates = depth > 0 ? fields : fields.filter((f) => isLeafType(getNamedType(f.type)));
    if (candidates.length === 0 || chance(0.05)) return `${responseKey('typename')}__typename`;
    const chosen = pick(candidates);
    const named = getNamedType(chosen.type);
    if (isLeafType(named)) return `${responseKey(chosen.name)}${chosen.name}${argumentsOf(chosen)}${directives()}`;
    const key = forSubset ? `u${names++}: ` : responseKey(chosen.name);
    const head = `${key}${chosen.name}${argumentsOf(chosen)}${directives()}`;
    return `${head} ${selectionSet(named, depth - 1)}`;
  }

  const query = schema.getQueryType() as GraphQLObjectType;
  const root = selectionSet(query, int(1, 4));
  const header = definitions.length > 0 ? `(${definitions.join(', ')})` : '';
  const text = `query Random${header} ${root} ${fragments.map((fragment) => `fragment ${fragment.name} on ${fragment.on.name} ${fragment.text}`).join(' ')}`;
  return { query: text, variables, tenant: pick(TENANTS) };
}

/** Selections a generated document stops at (then only leaves): keeps it under the compiled field bound, and fast. */
const MAX_SELECTIONS = 16;

type Answer = Record<string, unknown>;

/**
 * An answer as compared: all of it, in its order, but its errors sorted. graphql-js
 * records errors as the fields fail, in the order upstream reads settle, which the
 * document does not decide: the graphql-js run that answers after a compiled run ended
 * in errors (execution.ts) reads the same request's settled pages, and lists the same
 * errors in another order.
 */
function comparable(answer: Answer): string {
  const errors = answer['errors'] as unknown[] | undefined;
  return JSON.stringify(errors ? { ...answer, errors: errors.map((error) => JSON.stringify(error)).sort() } : answer);
}

/**
 * One document run as Apollo Server runs it once it is parsed and validated: through the
 * executor it was given (the compiled one, or graphql-js's `execute`), then the context's
 * item errors appended (plugins.ts, `itemErrors`). Each error is compared whole: message,
 * locations, path, extensions and the class and message of what was thrown.
 */
async function answer(run: 'compiled' | 'graphql-js', document: DocumentNode, { variables, tenant }: Generated): Promise<Answer> {
  const context = contextFor(tenant);
  const operation = getOperationAST(document)!;
  const result: ExecutionResult =
    run === 'compiled'
      ? await execution.executor({ document, operation, request: { variables }, context } as never)
      : await execute({ schema: reference, document, variableValues: variables, contextValue: context });
  const errors = [...(result.errors ?? []), ...context.itemErrors].map(described);
  return { ...(errors.length > 0 && { errors }), data: result.data };
}

function described(error: GraphQLError): unknown {
  const original = error.originalError;
  return { ...error.toJSON(), thrown: original ? `${original.constructor.name}: ${original.message}` : null };
}

const schema = createSubgraphSchema();
const reference = createSubgraphSchema();
let execution: CompiledExecution;
let values: Values;

beforeAll(async () => {
  execution = new CompiledExecution(createSubgraphSchema(), createSubgraphSchema, { compileAfter: 0 });
  // Real cursors of the served tenant, for `after` and `before`.
  const pages = await answer('graphql-js', parse('{ locations(first: 2) { pageInfo { startCursor endCursor } } shifts(first: 3) { edges { cursor } } }'), { query: '', variables: {}, tenant: 'ok' });
  const data = pages['data'] as { locations: { pageInfo: { startCursor: string; endCursor: string } }; shifts: { edges: Array<{ cursor: string }> } };
  values = { cursors: [data.locations.pageInfo.startCursor, data.locations.pageInfo.endCursor, ...data.shifts.edges.map((edge) => edge.cursor)] };
});

it.each(seeds)('seed %i: every generated document is answered alike compiled and by graphql-js', async (seed) => {
  const random = seeded(seed);
  const differences: string[] = [];
  const tally = { documents: 0, invalid: 0, compiled: 0, fallback: 0, withErrors: 0 };
  for (let i = 0; i < DOCUMENTS_PER_SEED; i++) {
    const generated = randomDocument(schema, random, values);
    tally.documents++;
    const document = parse(generated.query);
    const invalid = validate(schema, document);
    if (invalid.length > 0) {
      tally.invalid++;
      continue;
    }
    const before = execution.compiledRuns;
    const fast = await answer('compiled', document, generated);
    const plain = await answer('graphql-js', document, generated);
    if (execution.compiledRuns > before) tally.compiled++;
    else tally.fallback++;
    if (plain['errors']) tally.withErrors++;
    const [a, b] = [comparable(fast), comparable(plain)];
    if (a !== b) differences.push(`seed ${seed}, document ${i} (DIFF_SEED=${seed}), tenant "${generated.tenant}":\n${generated.query}\nvariables ${JSON.stringify(generated.variables)}\ncompiled:   ${a}\ngraphql-js: ${b}`);
  }
  // `DIFF_REPORT=1`: what the seed generated, and how many differences it found.
  if (process.env.DIFF_REPORT) process.stdout.write(`seed ${seed}: ${JSON.stringify(tally)}, ${differences.length} differences\n`);
  expect(differences.slice(0, 3)).toEqual([]);
  // The generator reaches both paths, and mostly valid documents (an invalid one is refused before execution, alike).
  expect(tally.invalid).toBeLessThan(tally.documents * 0.3);
  expect(tally.compiled).toBeGreaterThan(tally.documents * 0.1);
  expect(tally.fallback).toBeGreaterThan(tally.documents * 0.2);
  expect(tally.withErrors).toBeGreaterThan(tally.documents * 0.1);
}, 180_000);
