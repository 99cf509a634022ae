/**
 * How an operation is executed under Apollo Server: one a client sends again and again
 * runs as a query compiled by graphql-jit, anything else through graphql-js as before.
 *
 * Apollo Server lets a server bring its own executor through its gateway interface
 * (`gateway.load()` answers the schema and an `executor`); parsing, validation, the
 * document store, the query limits and cost check, error formatting and every plugin
 * hook stay Apollo's. Only the step from a validated document to its result changes.
 * graphql-js interprets the document on every request (collecting fields, reading
 * arguments, checking each value's type, for each of a page's records); graphql-jit
 * turns a document into a function once and runs that. On a page of 100 records that
 * was about a sixth of the product's CPU per request (bench/README.md, "Results of 2026-11-25T22:33Z").
 * The answers are graphql-js's: the whole test suite passed with every operation
 * compiled at its first run.
 *
 * graphql-js still answers:
 * - the first executions of an operation (COMPILE_AFTER): a document sent a few times
 *   is not worth compiling, and one selecting many fields (MAX_COMPILED_FIELDS) never;
 * - a request a plugin watches field by field (`willResolveField`, the inline trace a
 *   router samples): Apollo's instrumentation wraps the resolvers of its schema, which
 *   a compiled query would not call;
 * - operations other than queries, and a document graphql-jit cannot compile;
 * - a request refused before any resolver (variables that do not fit their types), so
 *   its errors are graphql-js's own, word for word.
 *
 * A compiled query gets the variables as graphql-js coerced them: the values the cost
 * estimate read (cost.ts, docs/limits.md) are the values execution sees.
 *
 * Compiled queries run on a schema of their own, built at the first compilation: once
 * Apollo instruments its schema for a traced request, every field of it has a resolver,
 * which would turn a compiled query's plain property reads into calls.
 */
import type { ApolloServerOptionsWithGateway, BaseContext } from '@apollo/server';
import { execute, getVariableValues, GraphQLError, locatedError, type DocumentNode, type ExecutionResult, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import type * as GraphQLJit from 'graphql-jit';
import type { CompiledQuery } from 'graphql-jit';
import { selectedFields } from './limits';

type Gateway = ApolloServerOptionsWithGateway<BaseContext>['gateway'];
type Executor = NonNullable<Awaited<ReturnType<Gateway['load']>>['executor']>;
type RequestContext = Parameters<Executor>[0];
type SchemaListener = Parameters<Gateway['onSchemaLoadOrUpdate']>[0];

/**
 * Executions of one operation by graphql-js before it is compiled (at the next one).
 * Compiling the largest operation compiled (MAX_COMPILED_FIELDS) takes about as long
 * as parsing and validating it ten times over, so a client sending ever new documents,
 * each often enough to be compiled, makes a replica do at most about twice the work
 * it did for them before; an app's operations are compiled within seconds.
 */
export const COMPILE_AFTER = 9;

/**
 * Compiled operations kept at most; past it the one used least recently goes (it runs
 * through graphql-js again, and compiles again if it is seen again). A compiled query
 * holds about 20 KiB of heap and 0.5 KiB more per field it selects (measured for
 * bench/README.md, "Results of 2026-11-25T22:33Z"); a client app sends a few dozen operations.
 */
export const MAX_COMPILED = 100;

/**
 * Operations selecting more fields than this (fragments expanded) are never compiled:
 * compiling costs about 0.07 ms and its code about 0.5 KiB per field, and the query
 * limits let a document select up to 20,000 (docs/limits.md). An app's queries select
 * a few dozen; a page of locations with its page info, 7.
 */
export const MAX_COMPILED_FIELDS = 200;

let jit: typeof GraphQLJit | undefined;

/** The symbol Apollo Server puts on a request's context when a plugin watches its fields (`willResolveField`). */
const WATCHED_FIELDS = 'apolloServerExecutionDispatcherWillResolveField';

/** One operation of one document: how often graphql-js ran it, then its compiled query (null: it is not compiled, ever). */
interface Entry {
  runs: number;
  compiled?: CompiledQuery | null;
}

export class CompiledExecution implements Gateway {
  private readonly listeners = new Set<SchemaListener>();
  /** By document: Apollo's document store hands every request of one text the same DocumentNode, and forgets it with the entry. */
  private readonly entries = new WeakMap<DocumentNode, Map<string, Entry>>();
  /** The entries holding a compiled query, least recently used first (at most MAX_COMPILED). */
  private readonly recent = new Map<Entry, true>();
  private compileSchema: GraphQLSchema | undefined;

  /**
   * @param schema what Apollo validates against and plugins see; graphql-js executes on it.
   * @param buildSchema another copy of the same schema, for compiled queries (called once, at the first compilation).
   */
  constructor(
    private readonly schema: GraphQLSchema,
    private readonly buildSchema: () => GraphQLSchema,
  ) {}

  onSchemaLoadOrUpdate(listener: SchemaListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async load(): Promise<{ schema: GraphQLSchema; executor: Executor }> {
    // A subgraph has no supergraph: Apollo passes this text to plugins' schemaDidLoadOrUpdate only.
    for (const listener of this.listeners) listener({ apiSchema: this.schema, coreSupergraphSdl: '' });
    return { schema: this.schema, executor: this.executor };
  }

  async stop(): Promise<void> {
    this.listeners.clear();
  }

  /** Compiled operations held now (at most MAX_COMPILED). */
  get compiled(): number {
    return this.recent.size;
  }

  readonly executor: Executor = async (requestContext) => {
    const compiled = this.compiledFor(requestContext);
    if (compiled) {
      // The variables as graphql-js coerces them, which is what the cost estimate read
      // (cost.ts); variables that do not fit are refused by graphql-js, in its words.
      const { coerced } = getVariableValues(this.schema, requestContext.operation!.variableDefinitions ?? [], requestContext.request.variables ?? {}, { maxErrors: 50 });
      if (coerced) {
        const result = await compiled.query(undefined, requestContext.context, coerced);
        // No data at all would be a refusal before any resolver ran: graphql-js answers it.
        if (result.data !== undefined) return result.errors ? { ...result, errors: result.errors.map(asLocatedError) } : result;
      }
    }
    return this.interpret(requestContext);
  };

  private interpret(requestContext: RequestContext): Promise<ExecutionResult> | ExecutionResult {
    return execute({
      schema: this.schema,
      document: requestContext.document,
      contextValue: requestContext.context,
      variableValues: requestContext.request.variables,
      operationName: requestContext.request.operationName,
    }) as Promise<ExecutionResult> | ExecutionResult;
  }

  /** The compiled query for this request, or undefined when graphql-js runs it (see the module's comment). */
  private compiledFor(requestContext: RequestContext): CompiledQuery | undefined {
    const { document, operation } = requestContext;
    if (!operation || operation.operation !== 'query' || watchesFields(requestContext.context)) return undefined;
    let byOperation = this.entries.get(document);
    if (!byOperation) {
      byOperation = new Map();
      this.entries.set(document, byOperation);
    }
    const name = requestContext.request.operationName ?? '';
    let entry = byOperation.get(name);
    if (!entry) {
      entry = { runs: 0 };
      byOperation.set(name, entry);
    }
    if (entry.compiled) {
      // Most recently used: to the end of the line.
      this.recent.delete(entry);
      this.recent.set(entry, true);
      return entry.compiled;
    }
    if (entry.compiled === null || entry.runs++ < COMPILE_AFTER) return undefined;
    entry.compiled = this.compile(document, operation, requestContext.request.operationName ?? undefined);
    if (!entry.compiled) return undefined;
    this.recent.set(entry, true);
    if (this.recent.size > MAX_COMPILED) {
      const [oldest] = this.recent.keys();
      this.recent.delete(oldest!);
      oldest!.compiled = undefined;
      oldest!.runs = 0;
    }
    return entry.compiled;
  }

  /** The operation compiled, or null when it is not to be (too many fields, or graphql-jit cannot). */
  private compile(document: DocumentNode, operation: OperationDefinitionNode, operationName: string | undefined): CompiledQuery | null {
    if (selectedFields(document, operation) > MAX_COMPILED_FIELDS) return null;
    this.compileSchema ??= this.buildSchema();
    // Loaded at the first compilation, not at start-up (a replica's cold start: bench/README.md).
    jit ??= require('graphql-jit') as typeof GraphQLJit;
    try {
      const compiled = jit.compileQuery(this.compileSchema, document, operationName);
      return jit.isCompiledQuery(compiled) ? compiled : null;
    } catch {
      return null;
    }
  }
}

function watchesFields(context: object): boolean {
  for (const symbol of Object.getOwnPropertySymbols(context)) if (symbol.description === WATCHED_FIELDS) return true;
  return false;
}

/**
 * A compiled query's error as graphql-js reports it: the error thrown, through
 * graphql-js's own `locatedError` (kept as it is when it is a GraphQL error with its
 * path, else wrapped with its message, the path and the thrown error's extensions), with
 * graphql-jit's locations. graphql-jit's own error class leaves `extensions` out when
 * the thrown error has none, which Apollo Server and its plugins read. graphql-js raises
 * a null in a non-null field as a plain Error (the one error of its own that is no
 * GraphQLError, so error formatting treats it as unexpected); so is it here.
 */
function asLocatedError(error: GraphQLError): GraphQLError {
  const original = error.originalError ?? (error.message.startsWith(NON_NULL_VIOLATION) ? new Error(error.message) : undefined);
  const located = original ? locatedError(original, undefined, error.path) : new GraphQLError(error.message, { path: error.path });
  if (located !== original && error.locations) (located as { locations?: GraphQLError['locations'] }).locations = error.locations;
  return located;
}

/** How graphql-js (and graphql-jit) word a null in a non-null field. */
const NON_NULL_VIOLATION = 'Cannot return null for non-nullable field ';
