import type { ApolloServerPlugin } from '@apollo/server';
import {
  GraphQLError,
  Kind,
  getArgumentValues,
  getNamedType,
  getNullableType,
  getVariableValues,
  isCompositeType,
  isInterfaceType,
  isListType,
  isLeafType,
  type DirectiveNode,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type VariableDefinitionNode,
  visit,
} from 'graphql';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../data/connections';
import { LIMIT_ERROR_CODE } from './limits';

/**
 * The cost of an operation: how big the largest answer it can produce is, counted
 * before anything runs.
 *
 * - Every field counts 1 each time it can appear in the answer, its selection
 *   counted under it: `count × (1 + cost of its selection)`.
 * - A list appears `count` times: a connection's `edges` and `nodes` its page size
 *   (`first` or `last`; the default page size when neither is given), `_entities` the
 *   number of representations, any other list the default page size.
 * - Those numbers are the ones execution will see: each argument's value as graphql-js
 *   coerces it for the resolver (literal or variable, variables inside list and object
 *   literals at any depth too, defaults applied, a single value given where a list is
 *   expected made a list of one). A request whose variables do not coerce has no
 *   estimate (undefined): execution refuses it before any resolver. An argument that
 *   does not coerce although its variables did fails only its field at execution, the
 *   others run: it counts at its largest (page size 100, a literal list's length).
 * - `__typename` counts 0, and so does a scalar field selected on an interface
 *   (`nodeId` on `Node`): the Federation spec allows no `@cost` on interface fields,
 *   so a router counts them 0, and its estimate must be ours (schema.graphql).
 * - Fragments count once per spread and aliases once each; every type condition is
 *   counted, as if every fragment applied. A field skipped by a literal
 *   `@skip(if: true)` or `@include(if: false)` counts 0.
 *
 * This is Apollo Router's `static_estimated` demand control, for our schema and the
 * weights schema.graphql declares; test/unit/cost.test.ts holds the two equal.
 */
export function estimateCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variableInputs: Readonly<Record<string, unknown>> = {},
): number | undefined {
  const variables = coerceWithGraphQL(schema, costVariables(document, operation), variableInputs);
  return variables && estimateWith(schema, document, operation, variables);
}

/** The coerced values the cost limit reads for an operation's variables (tests hold them equal to graphql-js's). */
export function costVariableValues(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode, inputs: Readonly<Record<string, unknown>>): CoercedVariables | undefined {
  return coerceCostVariables(schema, costVariables(document, operation), inputs);
}

/** The estimate, given the coerced values of the variables it reads (`coerceCostVariables`). */
function estimateWith(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode, variables: CoercedVariables): number {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  // A fragment's cost depends only on the page size its `edges`/`nodes` get: one
  // measure per (fragment, page size) keeps a fan-out of spreads linear to measure.
  const memo = new Map<string, number>();
  const active = new Set<string>();

  const costOfSet = (set: SelectionSetNode, parentType: GraphQLCompositeType, pageSize: number | null): number => {
    let total = 0;
    for (const selection of set.selections) {
      let cost: number;
      if (selection.kind === Kind.FIELD) {
        if (selection.name.value === '__typename' || isSkipped(selection.directives)) continue;
        const field = fieldOf(parentType, selection.name.value);
        if (!field) continue; // validation already refused unknown fields
        const type = getNamedType(field.type);
        if (isLeafType(type)) {
          cost = isInterfaceType(parentType) ? 0 : 1;
        } else {
          const count = !isListType(getNullableType(field.type))
            ? 1
            : pageSize !== null && (selection.name.value === 'edges' || selection.name.value === 'nodes')
              ? pageSize
              : selection.name.value === '_entities'
                ? representationCount(field, selection, variables)
                : DEFAULT_PAGE_SIZE;
          const ownPageSize = isConnection(field) ? connectionPageSize(field, selection, variables) : null;
          const below = selection.selectionSet && isCompositeType(type) ? costOfSet(selection.selectionSet, type, ownPageSize) : 0;
          cost = count * (1 + below);
        }
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        const condition = selection.typeCondition ? schema.getType(selection.typeCondition.name.value) : parentType;
        cost = isCompositeType(condition) ? costOfSet(selection.selectionSet, condition, pageSize) : 0;
      } else {
        const name = selection.name.value;
        const key = `${name}:${pageSize}`;
        const fragment = fragments.get(name);
        const condition = fragment && schema.getType(fragment.typeCondition.name.value);
        if (!fragment || !isCompositeType(condition) || active.has(key)) continue; // a spread cycle is graphql-js's to report
        let measured = memo.get(key);
        if (measured === undefined) {
          active.add(key);
          measured = costOfSet(fragment.selectionSet, condition, pageSize);
          active.delete(key);
          memo.set(key, measured);
        }
        cost = measured;
      }
      total = Math.min(CAP, total + cost);
    }
    return total;
  };

  const root = schema.getRootType(operation.operation);
  return root ? costOfSet(operation.selectionSet, root, null) : 0;
}

/** Past this, numbers only grow; capping keeps them exact integers in JSON. */
const CAP = Number.MAX_SAFE_INTEGER;

/** A Relay connection field: pages through `first`/`last` into its `edges` and `nodes`. */
function isConnection(field: GraphQLField<unknown, unknown>): boolean {
  return field.args.some((arg) => arg.name === 'first' || arg.name === 'last') && getNamedType(field.type).name.endsWith('Connection');
}

/** The arguments the estimate reads; their variables are the only ones it coerces. */
const PAGE_SIZE_ARGUMENTS: ReadonlySet<string> = new Set(['first', 'last']);
const LIST_ARGUMENTS: ReadonlySet<string> = new Set(['representations']);

/** Coerced values of the variables the estimate reads (those of its arguments, nothing else). */
type CoercedVariables = { readonly [name: string]: unknown };

/**
 * Some of a field's arguments as its resolver will get them: graphql-js's own
 * `getArgumentValues`, over only `names` (the other arguments' variables are not
 * coerced for the estimate, and are not needed). Undefined when they do not coerce
 * although every variable in them did (a null given for a nullable variable with a
 * default, in a list literal whose items are non-null): execution then fails that
 * field alone and goes on with the others, so the estimate must go on too, counting
 * the field at its largest (never "no estimate": that would let its siblings through).
 */
function argumentValues(field: GraphQLField<unknown, unknown>, node: FieldNode, names: ReadonlySet<string>, variables: CoercedVariables): Record<string, unknown> | undefined {
  try {
    return getArgumentValues({ ...field, args: field.args.filter((arg) => names.has(arg.name)) }, node, variables);
  } catch (error) {
    if (error instanceof GraphQLError) return undefined;
    throw error;
  }
}

/**
 * The page a connection asks for: the larger of `first` and `last`, the default page
 * size when neither is given. A value outside 1 to MAX_PAGE_SIZE is refused with
 * BAD_USER_INPUT when the field runs (the limit clients already know); clamped here,
 * so that refusal stays the one they get.
 */
function connectionPageSize(field: GraphQLField<unknown, unknown>, node: FieldNode, variables: CoercedVariables): number {
  const args = argumentValues(field, node, PAGE_SIZE_ARGUMENTS, variables);
  if (!args) return MAX_PAGE_SIZE;
  const sizes = [args['first'], args['last']].filter((value): value is number => typeof value === 'number').map(clampPageSize);
  return sizes.length === 0 ? DEFAULT_PAGE_SIZE : Math.max(...sizes);
}

function clampPageSize(value: number): number {
  return Math.min(Math.max(value, 0), MAX_PAGE_SIZE);
}

/**
 * How many representations `_entities` resolves: the coerced list's length (a single
 * value is a list of one). Arguments that do not coerce: the most the value can be, a
 * literal list's length or a list variable's.
 */
function representationCount(field: GraphQLField<unknown, unknown>, node: FieldNode, variables: CoercedVariables): number {
  const args = argumentValues(field, node, LIST_ARGUMENTS, variables);
  if (!args) {
    const literal = node.arguments?.find((arg) => LIST_ARGUMENTS.has(arg.name.value))?.value;
    const value = literal?.kind === Kind.VARIABLE ? variables[literal.name.value] : undefined;
    return literal?.kind === Kind.LIST ? literal.values.length : Array.isArray(value) ? value.length : 1;
  }
  const value = args['representations'];
  return Array.isArray(value) ? value.length : value === undefined || value === null ? 0 : 1;
}

/** Only literal conditions: the router's estimate does not read variables for these either. */
function isSkipped(directives: readonly DirectiveNode[] | undefined): boolean {
  const literal = (name: string) => {
    const value = directives?.find((directive) => directive.name.value === name)?.arguments?.find((arg) => arg.name.value === 'if')?.value;
    return value?.kind === Kind.BOOLEAN ? value.value : undefined;
  };
  return literal('skip') === true || literal('include') === false;
}

/** Introspection fields (`__schema`, `__type`) are not among them: bounded by the other limits, they count 0. */
function fieldOf(parentType: GraphQLCompositeType, name: string): GraphQLField<unknown, unknown> | undefined {
  return 'getFields' in parentType ? parentType.getFields()[name] : undefined; // a union selects only through fragments
}

/**
 * The error for an operation estimated over `maxCost` (the estimate and the budget under
 * the keys Apollo Router's demand control uses), or undefined when it is within it or
 * has no estimate (its variables do not coerce, and execution refuses them with their
 * own error). Queries (`costLimit`) and subscriptions (graphql/admission/subscribeGate.ts) refuse alike.
 */
export function costRefusal(operation: OperationDefinitionNode, estimated: number | undefined, maxCost: number, extensions: Record<string, unknown> = {}): GraphQLError | undefined {
  if (estimated === undefined || estimated <= maxCost) return undefined;
  const name = operation.name ? ` ${operation.name.value}` : '';
  return new GraphQLError(`operation${name} is estimated at ${estimated} (the size of the answer it can produce); at most ${maxCost} are allowed`, {
    extensions: { code: LIMIT_ERROR_CODE, 'cost.estimated': estimated, 'cost.max': maxCost, ...extensions },
  });
}

/**
 * Refuses an operation whose estimate is over `maxCost`, once its variables are known
 * (validation rules never see them) and before any resolver runs: HTTP 400, with the
 * estimate and the budget under the keys Apollo Router's demand control uses.
 */
export function costLimit<TContext extends object>(maxCost: number, refused: (reason: 'query_cost') => void = () => undefined): ApolloServerPlugin<TContext> {
  const estimates = new CostEstimates();
  const hooks: Awaited<ReturnType<NonNullable<ApolloServerPlugin<TContext>['requestDidStart']>>> = {
    async didResolveOperation({ schema, document, operation, request }) {
      if (!operation) return; // no operation to run: Apollo answers that itself
      const refusal = costRefusal(operation, estimates.of(schema, document, operation, request.variables ?? {}), maxCost, { http: { status: 400 } });
      if (!refusal) return;
      refused('query_cost');
      throw refusal;
    },
  };
  return {
    async requestDidStart() {
      return hooks;
    },
  };
}

/**
 * Estimates kept per operation, by the checked values they depend on. Clients choose
 * those values, so both the count and each key's length are bounded, and what this
 * can hold counts against the document store's bound (`costCacheBytes`).
 */
const ESTIMATES_PER_OPERATION = 16;
const MAX_KEY_LENGTH = 64;
/** A Map entry with its key string (at most MAX_KEY_LENGTH characters) and number, on V8, rounded up. */
const BYTES_PER_ESTIMATE = 2 * MAX_KEY_LENGTH + 96;
/** The per-operation record: its variable lists and its Map. */
const BYTES_PER_OPERATION = 512;

/** The most heap the cost limit keeps for one parsed document (documentStore.ts counts it with the document). */
export function costCacheBytes(document: DocumentNode): number {
  let operations = 0;
  for (const definition of document.definitions) if (definition.kind === Kind.OPERATION_DEFINITION) operations += 1;
  return operations * (BYTES_PER_OPERATION + ESTIMATES_PER_OPERATION * BYTES_PER_ESTIMATE);
}

/**
 * Which variables an operation's estimate reads: page sizes (`first`, `last`) and
 * `_entities` representations that are an argument's whole value, and every variable
 * anywhere inside such an argument's value (`representations: [$r, { id: $id }]`).
 */
interface CostVariables {
  readonly sizes: readonly VariableDefinitionNode[];
  readonly lists: readonly VariableDefinitionNode[];
  readonly nested: readonly VariableDefinitionNode[];
  readonly estimates: Map<string, number>;
}

/**
 * `estimateCost` once per parsed operation and checked value of the variables it reads
 * (Apollo hands the same document object to every request with the same text): a
 * request repeating a known operation pays the coercion of those few variables, a key
 * and a lookup, not a walk. The key holds only what coercion and clamping made of the
 * values (a page size from 0 to MAX_PAGE_SIZE, a list's length), never client text.
 */
export class CostEstimates {
  private readonly byOperation = new WeakMap<OperationDefinitionNode, CostVariables>();

  of(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode, inputs: Readonly<Record<string, unknown>>): number | undefined {
    let variables = this.byOperation.get(operation);
    if (variables === undefined) {
      variables = costVariables(document, operation);
      this.byOperation.set(operation, variables);
    }
    const coerced = coerceCostVariables(schema, variables, inputs);
    // Variables that do not coerce: no estimate, nothing kept; execution refuses them.
    if (!coerced) return undefined;
    const key = cacheKey(variables, coerced);
    let estimated = key === undefined ? undefined : variables.estimates.get(key);
    if (estimated !== undefined) return estimated;
    estimated = estimateWith(schema, document, operation, coerced);
    if (estimated !== undefined && key !== undefined && variables.estimates.size < ESTIMATES_PER_OPERATION) variables.estimates.set(key, estimated);
    return estimated;
  }
}

/**
 * The variables of `operation` that feed the arguments the estimate reads. One left
 * out would be missing when graphql-js coerces the argument for the estimate: a list
 * item that is a variable then fails to coerce, and the estimate must not lose that
 * field (nor, before, the whole operation: `_entities(representations: [$r])` beside
 * the nested bomb once made the bomb pass).
 */
function costVariables(document: DocumentNode, operation: OperationDefinitionNode): CostVariables {
  const sizes = new Set<string>();
  const lists = new Set<string>();
  const nested = new Set<string>();
  visit(document, {
    Argument(node) {
      const name = node.name.value;
      if (!PAGE_SIZE_ARGUMENTS.has(name) && !LIST_ARGUMENTS.has(name)) return false;
      if (node.value.kind === Kind.VARIABLE) {
        (PAGE_SIZE_ARGUMENTS.has(name) ? sizes : lists).add(node.value.name.value);
        return false;
      }
      // Inside list and object literals, at any depth.
      visit(node.value, { Variable: (variable) => void nested.add(variable.name.value) });
      return false;
    },
  });
  const definitions = operation.variableDefinitions ?? [];
  const among = (names: Set<string>) => definitions.filter((definition) => names.has(definition.variable.name.value));
  return { sizes: among(sizes), lists: among(lists), nested: among(nested), estimates: new Map() };
}

/**
 * graphql-js's coercion of just those variables (defaults applied); undefined when one
 * does not coerce. The values of a well-behaved client are read as they are, because
 * coercion would return them unchanged: an integer in Int's 32-bit range, null for a
 * nullable size, a list of objects (its length is all the estimate reads; a single
 * object is a list of one). Anything else, and every left-out variable, goes through
 * `getVariableValues` itself (test/unit/cost.test.ts holds the two equal).
 */
function coerceCostVariables(schema: GraphQLSchema, variables: CostVariables, inputs: Readonly<Record<string, unknown>>): CoercedVariables | undefined {
  const { sizes, lists, nested } = variables;
  if (sizes.length === 0 && lists.length === 0 && nested.length === 0) return {};
  // Variables inside literals are rare (a router sends `representations: $representations`): graphql-js's own coercion.
  if (nested.length > 0) return coerceWithGraphQL(schema, variables, inputs);
  const coerced: Record<string, unknown> = {};
  for (const definition of sizes) {
    const name = definition.variable.name.value;
    const value = inputs[name];
    if (isInt32(value) || (value === null && definition.type.kind !== Kind.NON_NULL_TYPE)) coerced[name] = value;
    else return coerceWithGraphQL(schema, variables, inputs);
  }
  for (const definition of lists) {
    const name = definition.variable.name.value;
    const value = inputs[name];
    if (Array.isArray(value) && value.every(isObject)) coerced[name] = value;
    else if (isObject(value)) coerced[name] = [value];
    else return coerceWithGraphQL(schema, variables, inputs);
  }
  return coerced;
}

function coerceWithGraphQL(schema: GraphQLSchema, { sizes, lists, nested }: CostVariables, inputs: Readonly<Record<string, unknown>>): CoercedVariables | undefined {
  return getVariableValues(schema, [...sizes, ...lists, ...nested], inputs as Record<string, unknown>, { maxErrors: 1 }).coerced;
}

/** A value GraphQL's Int coerces to itself. */
function isInt32(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value <= 2_147_483_647 && value >= -2_147_483_648;
}

function isObject(value: unknown): value is object {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The checked values the estimate depends on, as a key: a page size clamped as the
 * estimate clamps it (`-` for null, `?` for left out: an argument default would then
 * apply), a list by its length (`.` for none); undefined
 * when the key would be long (many such variables): then nothing is kept. Variables
 * inside literals have no part in it: a list literal's length is its own, whatever its
 * items' values, and they have coerced by now.
 */
function cacheKey({ sizes, lists }: CostVariables, coerced: CoercedVariables): string | undefined {
  let key = '';
  for (const definition of sizes) {
    const name = definition.variable.name.value;
    const value = coerced[name];
    key += typeof value === 'number' ? `${clampPageSize(value)},` : Object.hasOwn(coerced, name) ? '-,' : '?,';
  }
  for (const definition of lists) {
    const value = coerced[definition.variable.name.value];
    key += Array.isArray(value) ? `#${value.length},` : '.,';
  }
  return key.length <= MAX_KEY_LENGTH ? key : undefined;
}
