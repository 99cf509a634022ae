import {
  GraphQLError,
  Kind,
  MaxIntrospectionDepthRule,
  type ASTVisitor,
  type DocumentNode,
  type FragmentDefinitionNode,
  type OperationDefinitionNode,
  type ParseOptions,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
} from 'graphql';
import { DEFAULT_LIMITS, type QueryLimits } from '../../config';

/** What one GraphQL document may ask for: `limits.query` of the configuration (config/limits.ts says what each counts, its default and reason). */
export type { QueryLimits };

/** The defaults, for rooms built without the configuration (unit tests). */
export const DEFAULT_QUERY_LIMITS: QueryLimits = DEFAULT_LIMITS.query;

/** The extensions.code a refused document answers with (HTTP 400), like any validation error. */
export const LIMIT_ERROR_CODE = 'GRAPHQL_VALIDATION_FAILED';

/** For Apollo Server's `parseOptions`: graphql-js stops lexing after `maxTokens`. */
export function limitParseOptions(limits: QueryLimits = DEFAULT_QUERY_LIMITS): ParseOptions {
  return { maxTokens: limits.maxTokens };
}

/**
 * graphql-js words a token-limit stop as a syntax error (GRAPHQL_PARSE_FAILED); it is
 * a limit like the others, so `formatError` reports it with the same code.
 */
export function isTokenLimitError(message: string): boolean {
  // graphql-js 16 words it "more that"; accept the corrected wording of later releases too.
  return /^Syntax Error: Document contains more tha[nt] \d+ tokens\. Parsing aborted\.$/.test(message);
}

/**
 * Validation rules for Apollo Server's `validationRules`. A rule reports through
 * `context.reportError`, never throws: Apollo then answers HTTP 400 with
 * GRAPHQL_VALIDATION_FAILED and executes nothing, so no upstream call is made.
 */
export function limitRules(limits: QueryLimits = DEFAULT_QUERY_LIMITS): ValidationRule[] {
  return [(context) => limitsVisitor(context, limits), MaxIntrospectionDepthRule];
}

interface Measure {
  /** Deepest data field below this selection set. */
  depth: number;
  /** Deepest field inside an introspection root field, counted from that root field. */
  introspectionDepth: number;
  aliases: number;
  fields: number;
}

const INTROSPECTION_ROOTS = new Set(['__schema', '__type']);
/** Beyond this, numbers only grow; capping keeps fragment fan-out from overflowing. */
const CAP = Number.MAX_SAFE_INTEGER / 4;

function limitsVisitor(context: ValidationContext, limits: QueryLimits): ASTVisitor {
  const document = context.getDocument();
  const fragments = fragmentsOf(document);
  const report = (message: string) => context.reportError(new GraphQLError(message, { extensions: { code: LIMIT_ERROR_CODE } }));

  const directives = countDirectives(document);
  if (directives > limits.maxDirectives) report(`the document has ${directives} directives; at most ${limits.maxDirectives} are allowed`);

  return {
    OperationDefinition(operation: OperationDefinitionNode) {
      const measure = measureOperation(operation.selectionSet, fragments);
      const name = operation.name ? ` ${operation.name.value}` : '';
      if (measure.depth > limits.maxDepth) report(`operation${name} is ${measure.depth} fields deep; at most ${limits.maxDepth} are allowed`);
      if (measure.introspectionDepth > limits.maxIntrospectionDepth) {
        report(`operation${name} nests introspection ${measure.introspectionDepth} fields deep; at most ${limits.maxIntrospectionDepth} are allowed`);
      }
      if (measure.aliases > limits.maxAliases) report(`operation${name} has ${measure.aliases} aliases; at most ${limits.maxAliases} are allowed`);
      if (measure.fields > limits.maxFields) report(`operation${name} selects ${measure.fields} fields once fragments are expanded; at most ${limits.maxFields} are allowed`);
      return false; // measured as a whole; nothing below needs visiting again
    },
  };
}

/**
 * The fields `operation` selects once fragments are expanded: what `maxFields` bounds,
 * measured the same way (compiled execution, execution.ts, bounds what it compiles by it).
 */
export function selectedFields(document: DocumentNode, operation: OperationDefinitionNode): number {
  return measureOperation(operation.selectionSet, fragmentsOf(document)).fields;
}

function fragmentsOf(document: DocumentNode): Map<string, FragmentDefinitionNode> {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  return fragments;
}

function countDirectives(document: DocumentNode): number {
  let count = 0;
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const item of node) walk(item);
      return;
    }
    if (typeof node !== 'object' || node === null) return;
    const record = node as Record<string, unknown>;
    if (record.kind === Kind.DIRECTIVE) count += 1;
    for (const key in record) {
      if (key !== 'loc') walk(record[key]);
    }
  };
  walk(document.definitions);
  return count;
}

/**
 * Measures an operation, following fragment spreads. Each fragment is measured once
 * per mode (data or introspection) and its measure reused at every spread, so a
 * document that spreads fragments into each other costs linear time to measure while
 * its expanded size (fields, aliases) is still counted in full. A spread cycle (which
 * graphql-js reports on its own) counts as nothing here.
 */
function measureOperation(root: SelectionSetNode, fragments: ReadonlyMap<string, FragmentDefinitionNode>): Measure {
  const memo = new Map<string, Measure>();
  const active = new Set<string>();

  const measureSet = (set: SelectionSetNode, inIntrospection: boolean, atRoot: boolean): Measure => {
    const result: Measure = { depth: 0, introspectionDepth: 0, aliases: 0, fields: 0 };
    const add = (child: Measure, levels: number, introspectionLevels: number) => {
      result.depth = Math.max(result.depth, child.depth + levels);
      result.introspectionDepth = Math.max(result.introspectionDepth, child.introspectionDepth + introspectionLevels);
      result.aliases = Math.min(CAP, result.aliases + child.aliases);
      result.fields = Math.min(CAP, result.fields + child.fields);
    };
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) {
        // Only a real field named __schema or __type, at the operation's root, opens
        // the introspection subtree; inside it every level counts against its bound.
        const opensIntrospection = !inIntrospection && atRoot && INTROSPECTION_ROOTS.has(selection.name.value);
        const inside = inIntrospection || opensIntrospection;
        const child = selection.selectionSet ? measureSet(selection.selectionSet, inside, false) : { depth: 0, introspectionDepth: 0, aliases: 0, fields: 0 };
        const own: Measure = { depth: 0, introspectionDepth: 0, aliases: selection.alias ? 1 : 0, fields: 1 };
        add(own, 0, 0);
        if (inside) add({ ...child, depth: 0 }, 0, 1);
        else add(child, 1, 0);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        add(measureSet(selection.selectionSet, inIntrospection, atRoot), 0, 0);
      } else {
        const name = selection.name.value;
        const key = `${inIntrospection ? 'i' : 'd'}${atRoot ? 'r' : ''}:${name}`;
        let measured = memo.get(key);
        if (!measured) {
          const fragment = fragments.get(name);
          if (!fragment || active.has(key)) continue;
          active.add(key);
          measured = measureSet(fragment.selectionSet, inIntrospection, atRoot);
          active.delete(key);
          memo.set(key, measured);
        }
        add(measured, 0, 0);
      }
    }
    return result;
  };

  return measureSet(root, false, true);
}
