/**
 * One document check for both paths: a query's (Apollo Server parses and validates with
 * `parseOptions` and `validationRules` from limits.ts, and its `formatError` words what
 * it refuses with `wordDocumentError`) and a subscription's (the subscribe gate calls
 * `createDocumentCheck`, which parses with the same limits, validates with the same
 * rules and words its refusals with the same function). So a document refused for a
 * limit reads alike, message and code, whichever transport it came by.
 */
import { createHash } from 'node:crypto';
import type { ApolloServerPlugin } from '@apollo/server';
import { GraphQLError, Kind, getVariableValues, parse, specifiedRules, validate, type DocumentNode, type GraphQLFormattedError, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import { createDocumentStore } from '../server/documentStore';
import { LIMIT_ERROR_CODE, isTokenLimitError, limitParseOptions, limitRules, type QueryLimits } from './limits';
import { refusal, refusalError, statusOf, type RefusalReason } from './refusals';

/** What graphql-js's "Validation aborted." means, and what to do about it. */
export const VALIDATION_ABORTED =
  'Validation aborted: the document takes too much work to check (fields that share a response name are compared in pairs, fragments are expanded); select each field once and spread fewer fragments';

/**
 * The words of a parse or validation refusal: graphql-js's, except for two of its limits,
 * which it words as something else. A token limit stops the parser, so graphql-js calls
 * it a syntax error (GRAPHQL_PARSE_FAILED); it is a limit like the others. graphql-js
 * meters its own validation work (comparing fields that share a response name,
 * expanding fragments) and stops with two words. Undefined: no rewrite.
 */
export function wordDocumentError(formatted: Pick<GraphQLFormattedError, 'message' | 'extensions'>): { message: string; extensions: { code: string } } | undefined {
  const code = formatted.extensions?.['code'];
  if (code === 'GRAPHQL_PARSE_FAILED' && isTokenLimitError(formatted.message)) {
    return { message: formatted.message.replace(/^Syntax Error: /, ''), extensions: { code: LIMIT_ERROR_CODE } };
  }
  if (code === LIMIT_ERROR_CODE && formatted.message === 'Validation aborted.') return { message: VALIDATION_ABORTED, extensions: { code: LIMIT_ERROR_CODE } };
  return undefined;
}

/** A parsed and validated document, or why it is refused; and the response key of its first root field (what a refusal's path names), if it names one. */
export type CheckedDocument = ({ readonly document: DocumentNode } | { readonly errors: readonly GraphQLError[] }) & { readonly rootKey?: string | undefined };

/** Parsed and validated subscription documents kept, by the memory they hold (documentStore.ts). */
const DOCUMENT_CACHE_BYTES = 4 * 2 ** 20;

/**
 * A document parsed and validated once per text (by its SHA-256, as Apollo Server keys
 * its document store), within DOCUMENT_CACHE_BYTES; a refused one is worked out each
 * time (the gate counts each refusal against its connection).
 */
export function createDocumentCheck(schema: () => GraphQLSchema, queryLimits: QueryLimits): (query: string) => Promise<CheckedDocument> {
  const parseOptions = limitParseOptions(queryLimits);
  const rules = [...specifiedRules, ...limitRules(queryLimits)];
  const documents = createDocumentStore(DOCUMENT_CACHE_BYTES);
  return async (query) => {
    const key = createHash('sha256').update(query).digest('hex');
    const known = await documents.get(key);
    if (known) return { document: known, rootKey: rootKeyOf(known) };
    let document: DocumentNode;
    try {
      document = parse(query, parseOptions);
    } catch (error) {
      return { errors: [worded((error as Error).message, 'GRAPHQL_PARSE_FAILED')] };
    }
    const invalid = validate(schema(), document, rules);
    const rootKey = rootKeyOf(document);
    if (invalid.length > 0) return { rootKey, errors: invalid.map((error) => worded(error.message, LIMIT_ERROR_CODE, error)) };
    await documents.set(key, document);
    return { document, rootKey };
  };
}

/** A refusal of the document as Apollo Server's `formatError` words it (the same function). */
function worded(message: string, code: string, error?: GraphQLError): GraphQLError {
  const rewritten = wordDocumentError({ message, extensions: { code } });
  return new GraphQLError(rewritten?.message ?? message, { nodes: error?.nodes ?? null, extensions: { ...error?.extensions, code: rewritten?.extensions.code ?? code } });
}

/** The response key of the first field of the document's first operation, if it names one. */
export function rootKeyOf(document: DocumentNode): string | undefined {
  const operation = document.definitions.find((definition) => definition.kind === Kind.OPERATION_DEFINITION);
  const field = operation?.selectionSet.selections.find((selection) => selection.kind === Kind.FIELD);
  return field ? (field.alias ?? field.name).value : undefined;
}

/**
 * The coerced values of the variables `operation` declares (graphql-js's coercion, as
 * execution does it), and the bytes they keep (their JSON text's length); or why
 * they do not coerce (BAD_USER_INPUT). What the client sent beyond them is not kept.
 * graphql-js's `subscribe` coerces them again, a no-op for this schema's input types
 * (ID, DateTime, input objects of those).
 */
export function declaredVariables(schema: GraphQLSchema, operation: OperationDefinitionNode, sent: unknown): { coerced: Record<string, unknown>; bytes: number } | { errors: readonly GraphQLError[] } {
  if (sent !== undefined && sent !== null && (typeof sent !== 'object' || Array.isArray(sent))) return { errors: [new GraphQLError("the subscribe payload's variables must be an object", { extensions: { code: 'BAD_USER_INPUT' } })] };
  const definitions = operation.variableDefinitions ?? [];
  if (definitions.length === 0) return { coerced: {}, bytes: 0 };
  const result = getVariableValues(schema, definitions, (sent ?? {}) as Record<string, unknown>, { maxErrors: 10 });
  if (result.errors) return { errors: result.errors.map((error) => new GraphQLError(error.message, { nodes: error.nodes ?? null, extensions: { code: 'BAD_USER_INPUT' } })) };
  return { coerced: result.coerced, bytes: JSON.stringify(result.coerced).length };
}

/**
 * Counts the query documents Apollo Server refuses (they do not parse or validate, the
 * query limits among the rules) as `query_document`, through the one refusal event: the
 * subscription side counts its own as `document`.
 */
export function documentRefusals<TContext extends object>(refused: (reason: RefusalReason) => void): ApolloServerPlugin<TContext> {
  const hooks: Awaited<ReturnType<NonNullable<ApolloServerPlugin<TContext>['requestDidStart']>>> = {
    // A subscription's field has no event to resolve outside the live hub: graphql-js
    // would call its resolver without one (an internal error and an error log). Refused
    // before execution instead, as Apollo Router refuses a subscription it cannot serve.
    async didResolveOperation({ operation }) {
      if (operation?.operation !== 'subscription') return;
      refused('query_subscription');
      throw new GraphQLError(refusalError('query_subscription').message, { extensions: { code: refusal('query_subscription').code, http: { status: statusOf('query_subscription') } } });
    },
    async parsingDidStart() {
      return async (error) => {
        if (error) refused('query_document');
      };
    },
    async validationDidStart() {
      return async (errors) => {
        if (errors && errors.length > 0) refused('query_document');
      };
    },
  };
  return {
    async requestDidStart() {
      return hooks;
    },
  };
}
