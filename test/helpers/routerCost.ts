import {
  Kind,
  getNamedType,
  getNullableType,
  isAbstractType,
  isInputObjectType,
  isListType,
  isObjectType,
  valueFromASTUntyped,
  type ConstDirectiveNode,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputField,
  type GraphQLNamedType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';

/**
 * Apollo Router's `static_estimated` cost of one operation, from the `@cost` and
 * `@listSize` directives a schema carries (Federation's demand-control spec), ported
 * from apollo-router/src/plugins/demand_control/cost_calculator/static_cost.rs and
 * directives.rs (router 2.x). It shares nothing with src/graphql/admission/cost.ts on purpose:
 * the test that holds them equal proves our schema gives a router our numbers.
 *
 * Left out, as our schema does not need them: `@requires` costs, nested `sizedFields`
 * paths ("a { b }") and nested slicing paths ("input.count") fail loudly instead.
 */
export function routerEstimate(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode, variables: Record<string, unknown>, listSize: number): number {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }

  const scoreSelectionSet = (set: SelectionSetNode, parent: GraphQLNamedType, listSizes: ListSize[], inherited: ListSize[]): number => {
    let cost = 0;
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) {
        // A sized field (`edges` under a connection) takes its size from the directive above it.
        const sizeFromParent = max(listSizes.map((directive) => directive.sizeOf(selection.name.value)));
        const sizeFromInherited = max(inherited.map((directive) => directive.sizeOf(selection.name.value)));
        cost += scoreField(selection, parent, sizeFromParent ?? sizeFromInherited, []);
      } else if (selection.kind === Kind.FRAGMENT_SPREAD) {
        const fragment = fragments.get(selection.name.value);
        if (!fragment) throw new Error(`no fragment ${selection.name.value}`);
        cost += scoreSelectionSet(fragment.selectionSet, namedType(schema, fragment.typeCondition.name.value), listSizes, inherited);
      } else {
        const condition = selection.typeCondition ? namedType(schema, selection.typeCondition.name.value) : parent;
        cost += scoreSelectionSet(selection.selectionSet, condition, listSizes, inherited);
      }
    }
    return cost;
  };

  const scoreField = (field: FieldNode, parent: GraphQLNamedType, sizeFromUpstream: number | undefined, inherited: ListSize[]): number => {
    if (field.name.value === '__typename' || skippedByDirectives(field)) return 0;
    if (!('getFields' in parent)) throw new Error(`${parent.name} has no fields`);
    const definition = parent.getFields()[field.name.value] as GraphQLField<unknown, unknown> | undefined;
    if (!definition) throw new Error(`Field ${field.name.value} was found in query, but its type is missing from the schema.`);
    const own = listSizeDirectives(definition, field, variables);
    const expected = max([...own, ...inherited].map((directive) => directive.expectedSize));
    const instanceCount = !isListType(getNullableType(definition.type)) ? 1 : (sizeFromUpstream ?? expected ?? listSize);

    const type = getNamedType(definition.type);
    let typeCost = costWeight(definition.astNode?.directives, type) ?? (isObjectType(type) || isAbstractType(type) ? 1 : 0);
    if (field.selectionSet) typeCost += scoreSelectionSet(field.selectionSet, type, own, inherited);

    let argumentsCost = 0;
    for (const argument of field.arguments ?? []) {
      const argumentDefinition = definition.args.find((arg) => arg.name === argument.name.value);
      if (!argumentDefinition) throw new Error(`Argument ${argument.name.value} of field ${field.name.value} is missing a definition in the schema`);
      argumentsCost += scoreArgument(argument.value, argumentDefinition, variables);
    }
    return instanceCount * typeCost + argumentsCost;
  };

  const root = schema.getRootType(operation.operation);
  if (!root) throw new Error(`no ${operation.operation} root`);
  return (operation.operation === 'mutation' ? 10 : 0) + scoreSelectionSet(operation.selectionSet, root, [], []);
}

interface ListSize {
  readonly expectedSize: number | undefined;
  sizeOf(fieldName: string): number | undefined;
}

function listSizeDirectives(definition: GraphQLField<unknown, unknown>, field: FieldNode, variables: Record<string, unknown>): ListSize[] {
  return directivesNamed(definition.astNode?.directives, 'listSize').map((directive) => {
    const args = directiveArguments(directive);
    const assumedSize = args['assumedSize'] as number | undefined;
    const slicingArguments = args['slicingArguments'] as string[] | undefined;
    const sizedFields = args['sizedFields'] as string[] | undefined;
    const requireOne = (args['requireOneSlicingArgument'] as boolean | undefined) ?? true;
    let expectedSize = assumedSize;
    if (slicingArguments) {
      // Defaults from the field's definition, overridden by the arguments the operation gives.
      const values = new Map<string, ValueNode>();
      for (const arg of definition.args) if (arg.astNode?.defaultValue) values.set(arg.name, arg.astNode.defaultValue);
      for (const arg of field.arguments ?? []) values.set(arg.name.value, arg.value);
      const sizes = slicingArguments
        .map((name) => {
          if (name.includes('.')) throw new Error('nested slicing arguments are not ported');
          return sizeOf(values.get(name), variables);
        })
        .filter((size): size is number => size !== undefined);
      if (requireOne && sizes.length !== 1) throw new Error(`Exactly one slicing argument is required, but found ${sizes.length}`);
      expectedSize = max(sizes) ?? assumedSize;
    }
    for (const name of sizedFields ?? []) if (/[\s{]/.test(name)) throw new Error('nested sizedFields are not ported');
    return { expectedSize, sizeOf: (fieldName: string) => (sizedFields?.includes(fieldName) ? expectedSize : undefined) };
  });
}

/** An integer, a list's length, or a variable's; nothing for null or anything else. */
function sizeOf(value: ValueNode | undefined, variables: Record<string, unknown>): number | undefined {
  if (!value) return undefined;
  if (value.kind === Kind.INT) return Number(value.value);
  if (value.kind === Kind.LIST) return value.values.length;
  if (value.kind === Kind.VARIABLE) {
    const variable = variables[value.name.value];
    if (Array.isArray(variable)) return variable.length;
    return typeof variable === 'number' && Number.isInteger(variable) ? variable : undefined;
  }
  return undefined;
}

function scoreArgument(value: ValueNode, definition: GraphQLArgument | GraphQLInputField, variables: Record<string, unknown>): number {
  const type = getNamedType(definition.type);
  const weight = costWeight(definition.astNode?.directives, type);
  if (value.kind === Kind.OBJECT && isInputObjectType(type)) {
    const fields = type.getFields();
    return value.fields.reduce((sum, inner) => sum + scoreArgument(inner.value, fields[inner.name.value]!, variables), weight ?? 1);
  }
  if (value.kind === Kind.LIST) return value.values.reduce((sum, inner) => sum + scoreArgument(inner, definition, variables), weight ?? 0);
  if (value.kind === Kind.VARIABLE) return value.name.value in variables ? scoreVariable(variables[value.name.value], definition) : 0;
  if (value.kind === Kind.NULL) return 0;
  return weight ?? 0;
}

function scoreVariable(value: unknown, definition: GraphQLArgument | GraphQLInputField): number {
  const type = getNamedType(definition.type);
  const weight = costWeight(definition.astNode?.directives, type);
  if (value !== null && typeof value === 'object' && !Array.isArray(value) && isInputObjectType(type)) {
    const fields = type.getFields();
    return Object.entries(value).reduce((sum, [name, inner]) => sum + scoreVariable(inner, fields[name]!), weight ?? 1);
  }
  if (Array.isArray(value)) return value.reduce((sum: number, inner) => sum + scoreVariable(inner, definition), weight ?? 0);
  if (value === null) return 0;
  return weight ?? 0;
}

/** `@cost(weight:)` on the field or argument, else on its type. */
function costWeight(directives: readonly ConstDirectiveNode[] | undefined, type: GraphQLNamedType): number | undefined {
  const typeDirectives = [...(type.astNode?.directives ?? []), ...type.extensionASTNodes.flatMap((node) => node.directives ?? [])];
  const [cost] = [...directivesNamed(directives, 'cost'), ...directivesNamed(typeDirectives, 'cost')];
  return cost ? (directiveArguments(cost)['weight'] as number) : undefined;
}

function directivesNamed(directives: readonly ConstDirectiveNode[] | undefined, name: string): ConstDirectiveNode[] {
  return (directives ?? []).filter((directive) => directive.name.value === name);
}

function directiveArguments(directive: ConstDirectiveNode): Record<string, unknown> {
  return Object.fromEntries((directive.arguments ?? []).map((arg) => [arg.name.value, valueFromASTUntyped(arg.value)]));
}

/** Only literal conditions, on fields: the router reads neither variables nor fragments here. */
function skippedByDirectives(field: FieldNode): boolean {
  const literal = (name: string) => {
    const value = field.directives?.find((directive) => directive.name.value === name)?.arguments?.find((arg) => arg.name.value === 'if')?.value;
    return value?.kind === Kind.BOOLEAN ? value.value : undefined;
  };
  return literal('include') === false || literal('skip') === true;
}

function namedType(schema: GraphQLSchema, name: string): GraphQLNamedType {
  const type = schema.getType(name);
  if (!type) throw new Error(`no type ${name}`);
  return type;
}

function max(values: ReadonlyArray<number | undefined>): number | undefined {
  const defined = values.filter((value): value is number => value !== undefined);
  return defined.length === 0 ? undefined : Math.max(...defined);
}
