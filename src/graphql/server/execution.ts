/**
 * How an operation is executed under Apollo Server: one a client sends again and again
 * runs as a query compiled by graphql-jit, when graphql-jit answers it exactly as
 * graphql-js does; anything else through graphql-js as before.
 *
 * Apollo Server lets a server bring its own executor through its gateway interface
 * (`gateway.load()` answers the schema and an `executor`); parsing, validation, the
 * document store, the query limits and cost check, error formatting and every plugin
 * hook stay Apollo's. Only the step from a validated document to its result changes.
 * graphql-js interprets the document on every request (collecting fields, reading
 * arguments, checking each value's type, for each of a page's records); graphql-jit
 * turns a document into a function once and runs that. On a page of 100 records that
 * was about a sixth of the product's CPU per request (bench/README.md, "Results of 2026-11-25T22:33Z").
 *
 * graphql-jit is a second implementation of execution, and not the same one: the test
 * suite passed with every operation compiled, yet a skipped subtree ran compiled (a
 * document estimated at 1 exhausted the heap) and a fragment's field went missing
 * (issue "Armor, second round"). So it answers only where it is held to graphql-js:
 *
 * - operations in the subset `outsideCompiledSubset` (canonicalOperation.ts) admits,
 *   decided on the canonical form before anything is counted or compiled: no directive,
 *   no response key with a selection selected twice, no introspection, no `_entities`;
 * - answers without errors. graphql-jit's errors are not graphql-js's (it reports the
 *   errors of fields under a parent a non-null violation nulled, lists non-null errors
 *   last, names a repeated field `(name,name)`), so a compiled run that answers any error
 *   is discarded and graphql-js answers the request, on the same context (its reads are
 *   shared; the item errors the discarded run collected are dropped). The operation is
 *   then counted anew (`erred`), so one that fails every time runs twice at most once
 *   in COMPILE_AFTER + 1 runs.
 *
 * test/integration/compiledDifferential.test.ts runs generated documents both ways over
 * an upstream that answers errors and nulls, and finds the answers identical.
 *
 * graphql-js also answers:
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
 * estimate read (../admission/cost.ts, docs/limits.md) are the values execution sees.
 *
 * What graphql-jit compiles is the operation's canonical form (canonicalOperation.ts),
 * never the client's document: graphql-jit writes what it compiles into JavaScript
 * source, and the canonical form holds only the schema's names, canonical names and
 * punctuation. Every argument reaches the compiled query as a variable; operations
 * that differ only in literals, names or variable names share one compiled query.
 *
 * Compiled queries run on a schema of their own, built at the first compilation: once
 * Apollo instruments its schema for a traced request, every field of it has a resolver,
 * which would turn a compiled query's plain property reads into calls.
 */
import type { ApolloServerOptionsWithGateway, BaseContext } from '@apollo/server';
import { execute, getVariableValues, type DocumentNode, type ExecutionResult, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import type * as GraphQLJit from 'graphql-jit';
import type { CompiledQuery } from 'graphql-jit';
import type { GraphQLContext } from '../data/context';
import { argumentValues, canonicalize, outsideCompiledSubset, renameKeys, type CanonicalOperation } from './canonicalOperation';
import { selectedFields } from '../admission/limits';

type Gateway = ApolloServerOptionsWithGateway<BaseContext>['gateway'];
type Executor = NonNullable<Awaited<ReturnType<Gateway['load']>>['executor']>;
type RequestContext = Parameters<Executor>[0];
type SchemaListener = Parameters<Gateway['onSchemaLoadOrUpdate']>[0];

/**
 * Executions of one canonical operation by graphql-js before it is compiled (at the next
 * one). Compiling the largest operation compiled (MAX_COMPILED_FIELDS) takes about as
 * long as parsing and validating it ten times over, so a client sending ever new
 * documents, each often enough to be compiled, makes a replica do at most about twice
 * the work it did for them before; an app's operations are compiled within seconds.
 */
export const COMPILE_AFTER = 9;

/**
 * Compiled operations kept at most; past it the one used least recently goes (it runs
 * through graphql-js again, and compiles again if it is seen again). A compiled query
 * holds about 20 KiB of heap and 0.5 KiB more per field it selects (measured for
 * bench/README.md, "Results of 2026-11-25T22:33Z"); a client app sends a few dozen operations.
 */
export const MAX_COMPILED = 100;

/** Canonical operations whose runs are counted at most (the oldest count goes first). */
const MAX_COUNTED = 1000;

/**
 * Operations selecting more fields than this (fragments expanded) are never compiled:
 * compiling costs about 0.07 ms and its code about 0.5 KiB per field, and the query
 * limits let a document select up to 20,000 (docs/limits.md). An app's queries select
 * a few dozen; a page of locations with its page info, 7.
 */
export const MAX_COMPILED_FIELDS = 200;

export interface CompiledExecutionOptions {
  /** Executions by graphql-js before an operation is compiled (default COMPILE_AFTER; tests compile at once with 0). */
  readonly compileAfter?: number;
}

let jit: typeof GraphQLJit | undefined;

/** The symbol Apollo Server puts on a request's context when a plugin watches its fields (`willResolveField`). */
const WATCHED_FIELDS = 'apolloServerExecutionDispatcherWillResolveField';

/** One canonical operation: how often graphql-js ran it, then its compiled query (null: graphql-jit cannot compile it). */
interface Compilation {
  runs: number;
  compiled?: CompiledQuery | null;
}

export class CompiledExecution implements Gateway {
  private readonly listeners = new Set<SchemaListener>();
  /**
   * Each document's operations in canonical form (null: not compiled, ever), by
   * document: Apollo's document store hands every request of one text the same
   * DocumentNode, and forgets it with the entry.
   */
  private readonly canonical = new WeakMap<DocumentNode, Map<string, CanonicalOperation | null>>();
  /** Canonical operations not compiled yet, by canonical text, oldest first (at most MAX_COUNTED). */
  private readonly counting = new Map<string, Compilation>();
  /** Compiled ones by canonical text, least recently used first (at most MAX_COMPILED). */
  private readonly recent = new Map<string, Compilation>();
  private compileSchema: GraphQLSchema | undefined;
  private readonly compileAfter: number;

  /**
   * @param schema what Apollo validates against and plugins see; graphql-js executes on it.
   * @param buildSchema another copy of the same schema, for compiled queries (called once, at the first compilation).
   */
  constructor(
    private readonly schema: GraphQLSchema,
    private readonly buildSchema: () => GraphQLSchema,
    options: CompiledExecutionOptions = {},
  ) {
    this.compileAfter = options.compileAfter ?? COMPILE_AFTER;
  }

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

  /** Requests answered by a compiled query so far (the differential test checks its documents really ran compiled). */
  get compiledRuns(): number {
    return this.runsCompiled;
  }

  private runsCompiled = 0;

  readonly executor: Executor = async (requestContext) => {
    const found = this.compiledFor(requestContext);
    if (found) {
      // The variables as graphql-js coerces them, which is what the cost estimate read
      // (../admission/cost.ts); variables that do not fit are refused by graphql-js, in its words.
      const { coerced } = getVariableValues(this.schema, requestContext.operation!.variableDefinitions ?? [], requestContext.request.variables ?? {}, { maxErrors: 50 });
      const values = coerced && argumentValues(found.canonical.args, coerced);
      if (values) {
        // Errors a run collects beside its result (a malformed item skipped): a run whose answer is not used takes its own back.
        const itemErrors = (requestContext.context as Partial<GraphQLContext>).itemErrors;
        const collected = itemErrors?.length ?? 0;
        const result = await found.compiled.query(undefined, requestContext.context, values);
        // Only an answer without errors is graphql-jit's to give (see the module's comment).
        if (result.data !== undefined && result.errors === undefined) {
          this.runsCompiled++;
          return asClientsAnswer(result, found.canonical);
        }
        if (itemErrors) itemErrors.length = collected;
        this.erred(found.canonical.text);
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

  /**
   * A compiled run answered errors, so graphql-js answers the request again: the
   * operation goes back to being counted, and compiled runs again only after
   * COMPILE_AFTER more runs by graphql-js (its compiled query is kept). A document that
   * always fails costs a second execution once in every COMPILE_AFTER + 1 runs at most;
   * an app's operations that failed while the upstream did are compiled again soon after.
   */
  private erred(text: string): void {
    const compilation = this.recent.get(text);
    if (!compilation) return;
    this.recent.delete(text);
    compilation.runs = 0;
    this.counting.set(text, compilation);
    if (this.counting.size > MAX_COUNTED) this.counting.delete(this.counting.keys().next().value!);
  }

  /** The compiled query for this request, or undefined when graphql-js runs it (see the module's comment). */
  private compiledFor(requestContext: RequestContext): { compiled: CompiledQuery; canonical: CanonicalOperation } | undefined {
    const { document, operation } = requestContext;
    if (!operation || operation.operation !== 'query' || watchesFields(requestContext.context)) return undefined;
    const canonical = this.canonicalOf(document, operation, requestContext.request.operationName ?? '');
    if (!canonical) return undefined;
    const recent = this.recent.get(canonical.text);
    if (recent?.compiled) {
      // Most recently used: to the end of the line.
      this.recent.delete(canonical.text);
      this.recent.set(canonical.text, recent);
      return { compiled: recent.compiled, canonical };
    }
    const compilation = this.counted(canonical.text);
    if (compilation.compiled === null || compilation.runs++ < this.compileAfter) return undefined;
    // Compiled before, when its compiled run answered errors (`erred`): the same query again.
    if (compilation.compiled === undefined) compilation.compiled = this.compile(canonical.document);
    if (!compilation.compiled) return undefined;
    this.counting.delete(canonical.text);
    this.recent.set(canonical.text, compilation);
    if (this.recent.size > MAX_COMPILED) this.recent.delete(this.recent.keys().next().value!);
    return { compiled: compilation.compiled, canonical };
  }

  private canonicalOf(document: DocumentNode, operation: OperationDefinitionNode, name: string): CanonicalOperation | null {
    let byOperation = this.canonical.get(document);
    if (!byOperation) {
      byOperation = new Map();
      this.canonical.set(document, byOperation);
    }
    let canonical = byOperation.get(name);
    if (canonical === undefined) {
      canonical = selectedFields(document, operation) > MAX_COMPILED_FIELDS ? null : (canonicalize(this.schema, document, operation) ?? null);
      // Decided on the canonical form, before anything is counted or compiled: graphql-js runs the rest.
      if (canonical && outsideCompiledSubset(this.schema, canonical.document) !== undefined) canonical = null;
      byOperation.set(name, canonical);
    }
    return canonical;
  }

  private counted(text: string): Compilation {
    let compilation = this.counting.get(text);
    if (!compilation) {
      compilation = { runs: 0 };
      this.counting.set(text, compilation);
      if (this.counting.size > MAX_COUNTED) this.counting.delete(this.counting.keys().next().value!);
    }
    return compilation;
  }

  /** The canonical operation compiled, or null when graphql-jit cannot compile it. */
  private compile(document: DocumentNode): CompiledQuery | null {
    this.compileSchema ??= this.buildSchema();
    // Loaded at the first compilation, not at start-up (a replica's cold start: bench/README.md).
    jit ??= require('graphql-jit') as typeof GraphQLJit;
    try {
      const compiled = jit.compileQuery(this.compileSchema, document);
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

/** A compiled query's answer (without errors) in the client's terms: its aliases as keys. */
function asClientsAnswer(result: ExecutionResult, canonical: CanonicalOperation): ExecutionResult {
  return canonical.aliases.size > 0 ? { ...result, data: renameKeys(result.data, canonical.aliases) as ExecutionResult['data'] } : result;
}
