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
 */
import {
  BREAK,
  getNamedType,
  isListType,
  isNonNullType,
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
  type ASTNode,
  type DefinitionNode,
  type DocumentNode,
  type GraphQLInputType,
  type GraphQLSchema,
  type NameNode,
  type OperationDefinitionNode,
  type SourceLocation,
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
  /** A field's location in the canonical text (`line:column`) to its location in the client's document. */
  readonly locations: ReadonlyMap<string, SourceLocation>;
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
  return { text, document: canonicalDocument, args, aliases, locations: locationMap(transformed, canonicalDocument) };
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

/**
 * Where each field of the canonical text is in the client's document: the transformed
 * document kept the client's locations on its fields, and printing then parsing keeps
 * their order.
 */
function locationMap(transformed: DocumentNode, canonical: DocumentNode): Map<string, SourceLocation> {
  const before = fieldsOf(transformed);
  const after = fieldsOf(canonical);
  const map = new Map<string, SourceLocation>();
  if (before.length !== after.length) return map;
  after.forEach((node, i) => {
    const original = before[i]!.loc;
    if (node.loc && original) map.set(`${node.loc.startToken.line}:${node.loc.startToken.column}`, { line: original.startToken.line, column: original.startToken.column });
  });
  return map;
}

function fieldsOf(document: DocumentNode): ASTNode[] {
  const fields: ASTNode[] = [];
  for (const definition of document.definitions as readonly DefinitionNode[]) {
    visit(definition, {
      Field(node) {
        fields.push(node);
      },
      Argument(node) {
        fields.push(node.value);
      },
    });
  }
  return fields;
}
