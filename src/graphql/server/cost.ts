import type { ApolloServerPlugin } from '@apollo/server';
import {
  GraphQLError,
  Kind,
  getNamedType,
  getNullableType,
  getVariableValues,
  isCompositeType,
  isInterfaceType,
  isListType,
  isLeafType,
  type DirectiveNode,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
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
 *   (`first` or `last`, from the arguments or the variables; the default page size
 *   when neither is given), `_entities` the number of representations, any other
 *   list the default page size.
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
export function estimateCost(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode, variableInputs: Readonly<Record<string, unknown>> = {}): number {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variableInputs as Record<string, unknown>);
  // Invalid variables stop execution anyway; estimating with what was sent keeps the bound.
  const variables: Readonly<Record<string, unknown>> = coerced.coerced ?? variableInputs;
  // A fragment's cost depends only on the page size its `edges`/`nodes` get: one
  // measure per (fragment, page size) keeps a fan-out of spreads linear to measure.
  const memo = new Map<string, number>();
  const active = new Set<string>();

  const costOfSet = (set: SelectionSetNode, parentType: GraphQLCompositeType, pageSize: number | null): number => {
    let total = 0;
    for (const selection of set.selections) {
      let cost = 0;
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
                ? listLength(argument(selection.arguments, 'representations'), variables)
                : DEFAULT_PAGE_SIZE;
          const ownPageSize = isConnection(field) ? connectionPageSize(selection.arguments, variables) : null;
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

/**
 * The page a connection asks for: the larger of `first` and `last`, the default page
 * size when neither is given. A value outside 1 to MAX_PAGE_SIZE is refused with
 * BAD_USER_INPUT when the field runs (the limit clients already know); clamped here,
 * so that refusal stays the one they get.
 */
function connectionPageSize(args: readonly { name: { value: string }; value: ValueNode }[] | undefined, variables: Readonly<Record<string, unknown>>): number {
  const sizes = ['first', 'last']
    .map((name) => argument(args, name))
    .map((value) => (value === undefined ? undefined : valueOf(value, variables)))
    .filter((value): value is number => typeof value === 'number')
    .map((value) => Math.min(Math.max(value, 0), MAX_PAGE_SIZE));
  return sizes.length === 0 ? DEFAULT_PAGE_SIZE : Math.max(...sizes);
}

function listLength(value: ValueNode | undefined, variables: Readonly<Record<string, unknown>>): number {
  const resolved = value === undefined ? undefined : valueOf(value, variables);
  return Array.isArray(resolved) ? resolved.length : 0;
}

function argument(args: readonly { name: { value: string }; value: ValueNode }[] | undefined, name: string): ValueNode | undefined {
  return args?.find((arg) => arg.name.value === name)?.value;
}

/** An argument's value, as far as the estimate needs it: an integer, a list, or a variable's value. */
function valueOf(value: ValueNode, variables: Readonly<Record<string, unknown>>): unknown {
  if (value.kind === Kind.VARIABLE) return variables[value.name.value];
  if (value.kind === Kind.INT) return Number(value.value);
  if (value.kind === Kind.LIST) return value.values;
  return undefined;
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
 * Refuses an operation whose estimate is over `maxCost`, once its variables are known
 * (validation rules never see them) and before any resolver runs: HTTP 400, with the
 * estimate and the budget under the keys Apollo Router's demand control uses.
 */
export function costLimit<TContext extends object>(maxCost: number): ApolloServerPlugin<TContext> {
  const estimates = new CostEstimates();
  const hooks: Awaited<ReturnType<NonNullable<ApolloServerPlugin<TContext>['requestDidStart']>>> = {
    async didResolveOperation({ schema, document, operation, request }) {
      if (!operation) return; // no operation to run: Apollo answers that itself
      const estimated = estimates.of(schema, document, operation, request.variables ?? {});
      if (estimated <= maxCost) return;
      const name = operation.name ? ` ${operation.name.value}` : '';
      throw new GraphQLError(`operation${name} is estimated at ${estimated} (the size of the answer it can produce); at most ${maxCost} are allowed`, {
        extensions: { code: LIMIT_ERROR_CODE, 'cost.estimated': estimated, 'cost.max': maxCost, http: { status: 400 } },
      });
    },
  };
  return {
    async requestDidStart() {
      return hooks;
    },
  };
}

/** Estimates kept per operation and variable key, at most this many per operation (clients choose the values). */
const ESTIMATES_PER_OPERATION = 64;

/** Which variables an operation's estimate reads: page sizes (`first`, `last`) and `_entities` representations. */
interface CostVariables {
  readonly sizes: readonly VariableDefinitionNode[];
  readonly lists: readonly VariableDefinitionNode[];
  readonly estimates: Map<string, number>;
}

/**
 * `estimateCost` once per parsed operation and value of the variables it reads (Apollo
 * hands the same document object to every request with the same text): a request
 * repeating a known operation pays a key and a lookup, not a walk and a coercion of
 * all its variables. The estimate is a function of those values, with one exception,
 * computed afresh: a variable left out that has a default (its value then depends on
 * whether the other variables coerce).
 */
class CostEstimates {
  private readonly byOperation = new WeakMap<OperationDefinitionNode, CostVariables | null>();

  of(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode, inputs: Readonly<Record<string, unknown>>): number {
    let variables = this.byOperation.get(operation);
    if (variables === undefined) {
      variables = costVariables(document, operation);
      this.byOperation.set(operation, variables);
    }
    const key = variables ? cacheKey(variables, inputs) : undefined;
    if (!variables || key === undefined) return estimateCost(schema, document, operation, inputs);
    let estimated = variables.estimates.get(key);
    if (estimated === undefined) {
      estimated = estimateCost(schema, document, operation, inputs);
      if (variables.estimates.size < ESTIMATES_PER_OPERATION) variables.estimates.set(key, estimated);
    }
    return estimated;
  }
}

/** The variables the estimate reads; null when one is read both as a size and as a list (not cached). */
function costVariables(document: DocumentNode, operation: OperationDefinitionNode): CostVariables | null {
  const sizes = new Set<string>();
  const lists = new Set<string>();
  visit(document, {
    Argument(node) {
      if (node.value.kind !== Kind.VARIABLE) return;
      const name = node.name.value;
      if (name === 'first' || name === 'last') sizes.add(node.value.name.value);
      else if (name === 'representations') lists.add(node.value.name.value);
    },
  });
  for (const name of sizes) if (lists.has(name)) return null;
  const definitions = operation.variableDefinitions ?? [];
  return {
    sizes: definitions.filter((definition) => sizes.has(definition.variable.name.value)),
    lists: definitions.filter((definition) => lists.has(definition.variable.name.value)),
    estimates: new Map(),
  };
}

/** The values the estimate reads, as a key (a list by its length); undefined when the estimate must be computed afresh. */
function cacheKey({ sizes, lists }: CostVariables, inputs: Readonly<Record<string, unknown>>): string | undefined {
  let key = '';
  for (const definition of sizes) {
    const value = inputs[definition.variable.name.value];
    if (value === undefined && definition.defaultValue) return undefined;
    key += `${JSON.stringify(value ?? null)}${value === undefined ? '?' : ''},`;
  }
  for (const definition of lists) {
    const value = inputs[definition.variable.name.value];
    if (!Array.isArray(value)) return undefined;
    key += `#${value.length},`;
  }
  return key;
}
