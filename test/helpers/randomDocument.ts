import {
  getNamedType,
  isAbstractType,
  isInterfaceType,
  isLeafType,
  isNonNullType,
  isObjectType,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLObjectType,
  type GraphQLSchema,
} from 'graphql';
import { encodeNodeId } from '../../src/graphql/data/node';

/**
 * Random query documents over the subgraph's schema, from a seeded random source: the
 * generator of test/integration/compiledDifferential.test.ts (compiled execution against
 * graphql-js), also used by test/integration/wholeAnswers.test.ts (answers kept whole
 * against the plain path). `Domain` names the ids and tenants the arguments are drawn from.
 */

/** The ids arguments are drawn from, and the tenants a document is asked for (`''`: no identity). */
export interface Domain {
  /** At least six. */
  readonly locationIds: readonly string[];
  /** At least eight. */
  readonly shiftIds: readonly string[];
  readonly tenants: readonly string[];
}

export interface Generated {
  readonly query: string;
  readonly variables: Record<string, unknown>;
  readonly tenant: string;
}

/** Where the generator takes its argument values from. */
export interface Values {
  readonly cursors: readonly string[];
}

/**
 * One random query over the schema, type by type: each selection set gets fields (some
 * under a response key used again), inline fragments and spreads (new fragments, or
 * ones spread elsewhere already), each perhaps under `@skip`/`@include`.
 */
export function randomDocument(schema: GraphQLSchema, random: () => number, values: Values, domain: Domain): Generated {
  const { locationIds: LOCATION_IDS, shiftIds: SHIFT_IDS, tenants: TENANTS } = domain;
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

