/**
 * An operation as graphql-jit may compile it: a document that holds nothing of the
 * client's text (compiled execution, execution.ts).
 *
 * graphql-jit writes parts of the document into JavaScript source and runs it through
 * `new Function`. Some of it unescaped: a string literal marked as a date became
 * `new Date(<the client's text>)` in the generated code, which let any client run code
 * in a replica (issue "Armor", finding 1). So nothing a client wrote reaches it:
 *
 * - every argument (of a field or a directive, literal, variable or a mix) becomes a
 *   variable `$a<n>` of the argument's own type, whose value is worked out from the
 *   client's document per request (graphql-js's `valueFromAST`, as its own execution
 *   does); literals are never printed;
 * - the client's variable definitions (and their default values) are dropped: the
 *   values graphql-js coerced, defaults applied, are what `$a<n>` is computed from;
 * - aliases become `__r<n>` and fragment names `f<n>`; the operation has no name. The
 *   answer's keys and error paths are renamed back (`renameKeys`).
 *
 * What is left are the schema's own names (fields, arguments, types, directives), the
 * canonical names and punctuation. `canonicalize` checks exactly that on the printed
 * text, token by token, and refuses (graphql-js then answers) anything else. Documents
 * that differ only in their literals, names or variable names have one canonical text,
 * so they share one compiled query.
 *
 * Holding no client text does not make graphql-jit answer as graphql-js does; which
 * canonical operations it may compile for that is `outsideCompiledSubset`'s to say.
 */
import {
  BREAK,
  getNamedType,
  isAbstractType,
  isListType,
  isNonNullType,
  isObjectType,
  Kind,
  Lexer,
  parse,
  print,
  Source,
  TokenKind,
  TypeInfo,
  valueFromAST,
  visit,
  visitWithTypeInfo,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLObjectType,
  type GraphQLSchema,
  type NameNode,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type TypeNode,
  type ValueNode,
  type VariableDefinitionNode,
} from 'graphql';

/** One argument of the client's document, as the canonical variable that carries it. */
export interface HoistedArgument {
  /** The canonical variable's name (`a0`, `a1`, ...). */
  readonly name: string;
  readonly type: GraphQLInputType;
  /** The client's value node (a literal, a variable, or a literal holding variables). */
  readonly value: ValueNode;
  /** Its value, worked out once when it reads no variable. */
  readonly constant?: unknown;
  /** The client's variable, when the whole argument is one. */
  readonly variable?: string;
}

export interface CanonicalOperation {
  /** The canonical text: the schema's names, canonical names and punctuation only. */
  readonly text: string;
  /** The canonical text parsed: what graphql-jit compiles. */
  readonly document: DocumentNode;
  readonly args: readonly HoistedArgument[];
  /** Canonical response key (`__r<n>`) to the client's alias; empty when the document has none. */
  readonly aliases: ReadonlyMap<string, string>;
}

const CANONICAL_NAME = /^(?:a|f|__r)\d+$/;
/** Names graphql's grammar uses as keywords. */
const KEYWORDS = new Set(['query', 'fragment', 'on']);
/** Punctuation the canonical text may hold; no string, number or block string token ever. */
const PUNCTUATION = new Set<string>([
  TokenKind.SOF,
  TokenKind.EOF,
  TokenKind.BANG,
  TokenKind.DOLLAR,
  TokenKind.PAREN_L,
  TokenKind.PAREN_R,
  TokenKind.SPREAD,
  TokenKind.COLON,
  TokenKind.AT,
  TokenKind.BRACKET_L,
  TokenKind.BRACKET_R,
  TokenKind.BRACE_L,
  TokenKind.BRACE_R,
]);

/** The schema's own names, once per schema. */
const schemaNames = new WeakMap<GraphQLSchema, Set<string>>();

/**
 * The operation of `document` in canonical form, or undefined when it cannot be put in
 * one (graphql-js then executes it; nothing is lost but speed).
 */
export function canonicalize(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode): CanonicalOperation | undefined {
  const typeInfo = new TypeInfo(schema);
  const args: HoistedArgument[] = [];
  const aliases = new Map<string, string>();
  const canonicalAlias = new Map<string, string>();
  const fragments = new Map<string, string>();
  /** The type each canonical variable is declared with. */
  const declaredTypes = new Map<string, GraphQLInputType>();
  const fragmentName = (name: NameNode): NameNode => {
    let canonical = fragments.get(name.value);
    if (canonical === undefined) fragments.set(name.value, (canonical = `f${fragments.size}`));
    return nameNode(canonical);
  };
  let refused = false;
  const definitions = document.definitions.filter((definition) => definition === operation || definition.kind === Kind.FRAGMENT_DEFINITION);
  const transformed = visit(
    { kind: Kind.DOCUMENT, definitions } as DocumentNode,
    visitWithTypeInfo(typeInfo, {
      Argument(node) {
        const argument = typeInfo.getArgument();
        const hoisted = argument && hoist(`a${args.length}`, argument.type, node.value);
        if (!argument || !hoisted) {
          refused = true;
          return BREAK;
        }
        args.push(hoisted);
        // A non-null argument with a default takes its default when the variable is absent: declared nullable.
        const declared = isNonNullType(argument.type) && argument.defaultValue !== undefined ? argument.type.ofType : argument.type;
        declaredTypes.set(hoisted.name, declared);
        return { ...node, value: { kind: Kind.VARIABLE, name: nameNode(hoisted.name), ...(node.value.loc && { loc: node.value.loc }) } };
      },
      Field(node) {
        if (!node.alias) return undefined;
        if (node.alias.value === node.name.value) return { ...node, alias: undefined };
        let canonical = canonicalAlias.get(node.alias.value);
        if (canonical === undefined) {
          canonical = `__r${canonicalAlias.size}`;
          canonicalAlias.set(node.alias.value, canonical);
          aliases.set(canonical, node.alias.value);
        }
        return { ...node, alias: nameNode(canonical) };
      },
      FragmentSpread: (node) => ({ ...node, name: fragmentName(node.name) }),
      FragmentDefinition: (node) => ({ ...node, name: fragmentName(node.name) }),
      // The client's variable definitions (names, default values, directives) are not carried over.
      VariableDefinition: () => null,
    }),
  );
  if (refused) return undefined;
  // The canonical variables, declared once every argument is hoisted (fragments come after the operation).
  const variableDefinitions = args.map((arg) => variableDefinition(arg.name, declaredTypes.get(arg.name)!));
  const canonicalDefinitions = transformed.definitions.map((definition) =>
    definition.kind === Kind.OPERATION_DEFINITION ? { ...definition, name: undefined, variableDefinitions } : definition,
  );
  const text = print({ ...transformed, definitions: canonicalDefinitions });
  if (!onlyCanonical(text, namesOf(schema))) return undefined;
  const canonicalDocument = parse(text);
  return { text, document: canonicalDocument, args, aliases };
}

/**
 * Why graphql-jit could answer the canonical operation `document` otherwise than
 * graphql-js, or undefined when it answers it exactly as graphql-js does (then it may
 * be compiled; otherwise graphql-js runs it, every time).
 *
 * graphql-jit is a second implementation of execution, and two of its steps are not
 * graphql-js's (issue "Armor, second round"):
 *
 * - `@skip`/`@include`: graphql-jit folds a condition into the field nodes below it
 *   (`__internalShouldInclude`, written on the document's own nodes), ORs the
 *   conditions of the nodes that share a response key and collects sub-fields from all
 *   of them. A condition on an inline fragment or a spread does not reach the fields
 *   merged under it, so a skipped subtree ran (finding 1: a document estimated at 1
 *   answered 608,400 ids, or exhausted the heap); a condition on one spread of a
 *   fragment stuck to its other spreads (finding 2: a non-null field went missing). Its
 *   `visitedFragmentNames` skips a second spread of a fragment whatever the first's
 *   condition was, where graphql-js checks the condition first.
 * - a response key selected twice with sub-selections (two nodes, from fragments,
 *   inline fragments or the same field written twice): graphql-jit merges their
 *   sub-fields by its own rules, the ones that went wrong above.
 *
 * So the subset compiled has neither: no directive anywhere (graphql-jit then leaves every
 * node's condition list empty, and nothing a compilation writes on a node changes
 * another), and in each selection set, for each object type it can be at run time,
 * every response key that has a selection once, with fragments and inline fragments
 * expanded as graphql-js collects them (each such field is one node, resolved and
 * merged as written). A leaf without arguments may repeat (Relay documents select `id`
 * in every fragment): there is nothing to merge. Meta fields other than `__typename`
 * (introspection, answered by graphql-js's own resolvers) stay out too, and so do the
 * fields of LISTS_OF_PROMISES. The rest of execution (resolvers, abstract types, lists,
 * nulls) is held to graphql-js by the differential test
 * (test/integration/compiledDifferential.test.ts), and errors by not using a compiled
 * answer that has any (execution.ts); what the test found is on docs/limits.md.
 */
export function outsideCompiledSubset(schema: GraphQLSchema, document: DocumentNode): string | undefined {
  let reason: string | undefined;
  visit(document, {
    Directive() {
      reason = 'a directive';
      return BREAK;
    },
  });
  if (reason) return reason;
  const fragments = new Map<string, FragmentDefinitionNode>();
  let operation: OperationDefinitionNode | undefined;
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
    else if (definition.kind === Kind.OPERATION_DEFINITION) operation ??= definition;
  }
  const root = operation && operation.operation === 'query' ? schema.getQueryType() : undefined;
  if (!operation || !root) return 'not a query';
  return repeatedKey(schema, fragments, operation.selectionSet, root);
}

/**
 * Fields whose resolver answers a list that holds promises. graphql-jit puts the null
 * of an item whose promise rejects at the end of the list (its runtime's `safeMap`
 * error handler pushes it) and leaves a hole in the item's place: `_entities` answered
 * `[null, {…}, null]` for two representations. `@apollo/subgraph`'s `_entities` maps
 * each representation to its `__resolveReference` promise; every other list field of
 * the schema answers plain values (the differential test would see one that did not).
 */
const LISTS_OF_PROMISES = new Set(['Query._entities']);

/** The first reason, in `selectionSet` (of a value of type `parent`) or below it, why a response key is not selected exactly once. */
function repeatedKey(schema: GraphQLSchema, fragments: ReadonlyMap<string, FragmentDefinitionNode>, selectionSet: SelectionSetNode, parent: GraphQLNamedType): string | undefined {
  const runtimeTypes: readonly GraphQLObjectType[] = isAbstractType(parent) ? schema.getPossibleTypes(parent) : isObjectType(parent) ? [parent] : [];
  for (const runtimeType of runtimeTypes) {
    const fields = new Map<string, FieldNode[]>();
    const collect = (selections: SelectionSetNode): string | undefined => {
      for (const selection of selections.selections) {
        if (selection.kind === Kind.FIELD) {
          const key = selection.alias?.value ?? selection.name.value;
          const nodes = fields.get(key);
          if (nodes) nodes.push(selection);
          else fields.set(key, [selection]);
          continue;
        }
        const fragment = selection.kind === Kind.FRAGMENT_SPREAD ? fragments.get(selection.name.value) : selection;
        if (!fragment) return 'an unknown fragment';
        const condition = fragment.typeCondition && schema.getType(fragment.typeCondition.name.value);
        const applies = !condition || condition === runtimeType || (isAbstractType(condition) && schema.isSubType(condition, runtimeType));
        if (!applies) continue;
        const found = collect(fragment.selectionSet);
        if (found) return found;
      }
      return undefined;
    };
    const found = collect(selectionSet);
    if (found) return found;
    for (const [key, nodes] of fields) {
      const [field] = nodes as [FieldNode];
      // A leaf selected again is the same leaf (validation holds both to one field and one set of arguments): nothing to merge.
      if (nodes.length > 1 && nodes.some((node) => node.selectionSet || node.arguments?.length)) return `the response key ${key} selected twice with a selection`;
      if (field.name.value.startsWith('__')) {
        if (field.name.value === '__typename') continue;
        return 'introspection';
      }
      const definition = runtimeType.getFields()[field.name.value];
      if (!definition) return `no field ${runtimeType.name}.${field.name.value}`;
      if (LISTS_OF_PROMISES.has(`${runtimeType.name}.${definition.name}`)) return `${runtimeType.name}.${definition.name}, a list of promises`;
      if (!field.selectionSet) continue;
      const below = repeatedKey(schema, fragments, field.selectionSet, getNamedType(definition.type));
      if (below) return below;
    }
  }
  return undefined;
}

/**
 * The canonical variables' values for one request, from the values graphql-js coerced
 * for the client's variables; undefined when one does not fit (a null for a non-null
 * argument, say): graphql-js then answers, in its own words.
 */
export function argumentValues(args: readonly HoistedArgument[], variables: Record<string, unknown>): Record<string, unknown> | undefined {
  const values: Record<string, unknown> = {};
  for (const arg of args) {
    if (arg.constant !== undefined) {
      values[arg.name] = arg.constant;
      continue;
    }
    // An absent variable leaves the argument out: it takes its default, as in graphql-js.
    if (arg.variable !== undefined && !Object.hasOwn(variables, arg.variable)) continue;
    const value = valueFromAST(arg.value, arg.type, variables);
    if (value === undefined) return undefined;
    values[arg.name] = value;
  }
  return values;
}

/** A value (an answer's data) with canonical response keys renamed to the client's aliases. */
export function renameKeys(value: unknown, aliases: ReadonlyMap<string, string>): unknown {
  if (Array.isArray(value)) return value.map((item) => renameKeys(item, aliases));
  if (value === null || typeof value !== 'object') return value;
  // No prototype, as graphql-js's own answers: an alias `__proto__` is a key like any other.
  const renamed = Object.create(null) as Record<string, unknown>;
  for (const [key, item] of Object.entries(value)) renamed[aliases.get(key) ?? key] = renameKeys(item, aliases);
  return renamed;
}

function hoist(name: string, type: GraphQLInputType, value: ValueNode): HoistedArgument | undefined {
  if (value.kind === Kind.VARIABLE) return { name, type, value, variable: value.name.value };
  if (readsVariables(value)) return { name, type, value };
  const constant = valueFromAST(value, type);
  return constant === undefined ? undefined : { name, type, value, constant };
}

function readsVariables(value: ValueNode): boolean {
  let reads = false;
  visit(value, {
    Variable() {
      reads = true;
      return BREAK;
    },
  });
  return reads;
}

function nameNode(value: string): NameNode {
  return { kind: Kind.NAME, value };
}

function typeNode(type: GraphQLInputType): TypeNode {
  if (isNonNullType(type)) return { kind: Kind.NON_NULL_TYPE, type: typeNode(type.ofType) as never };
  if (isListType(type)) return { kind: Kind.LIST_TYPE, type: typeNode(type.ofType as GraphQLInputType) };
  return { kind: Kind.NAMED_TYPE, name: nameNode(getNamedType(type).name) };
}

function variableDefinition(name: string, type: GraphQLInputType): VariableDefinitionNode {
  return { kind: Kind.VARIABLE_DEFINITION, variable: { kind: Kind.VARIABLE, name: nameNode(name) }, type: typeNode(type) };
}

/** Whether `text` holds only punctuation, keywords, the schema's names and canonical names. */
function onlyCanonical(text: string, names: ReadonlySet<string>): boolean {
  const lexer = new Lexer(new Source(text));
  for (let token = lexer.advance(); ; token = lexer.advance()) {
    if (token.kind === TokenKind.EOF) return true;
    if (token.kind === TokenKind.NAME) {
      const name = token.value;
      if (!names.has(name) && !KEYWORDS.has(name) && !CANONICAL_NAME.test(name)) return false;
    } else if (!PUNCTUATION.has(token.kind)) {
      return false;
    }
  }
}

function namesOf(schema: GraphQLSchema): ReadonlySet<string> {
  let names = schemaNames.get(schema);
  if (names) return names;
  names = new Set(['__typename', '__schema', '__type']);
  for (const directive of schema.getDirectives()) {
    names.add(directive.name);
    for (const arg of directive.args) names.add(arg.name);
  }
  for (const type of Object.values(schema.getTypeMap())) {
    names.add(type.name);
    if ('getFields' in type) {
      for (const field of Object.values(type.getFields())) {
        names.add(field.name);
        if ('args' in field) for (const arg of field.args) names.add(arg.name);
      }
    }
  }
  schemaNames.set(schema, names);
  return names;
}
