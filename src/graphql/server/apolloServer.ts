/**
 * The Apollo Server this subgraph runs: the subgraph schema (schema.ts) and its
 * execution (execution.ts), the query
 * limits and cost bound (../admission/limits.ts, ../admission/cost.ts), error formatting (../errors.ts) and the
 * plugins (plugins.ts), put together; not started (the HTTP side hands requests to it).
 */
import type { Server } from 'node:http';
import { ApolloServer, type ApolloServerPlugin } from '@apollo/server';
import { ApolloServerValidationErrorCode } from '@apollo/server/errors';
import { ApolloServerPluginDrainHttpServer } from '@apollo/server/plugin/drainHttpServer';
import type { GraphQLFormattedError, GraphQLSchema } from 'graphql';
import type { Logger } from 'pino';
import type { GraphQLContext } from '../data/context';
import { costLimit } from '../admission/cost';
import { createErrorFormatter } from '../errors';
import { createDocumentStore, createPersistedQueryCache } from './documentStore';
import { documentRefusals, wordDocumentError } from '../admission/document';
import type { RefusalReason } from '../admission/refusals';
import { DEFAULT_QUERY_LIMITS, limitParseOptions, limitRules, type QueryLimits } from '../admission/limits';
import { subgraphPlugins } from './plugins';
import { createSubgraphSchema } from './schema';
import { CompiledExecution } from './execution';

export interface ApolloServerOptions {
  readonly logger: Logger;
  readonly httpServer: Server;
  /** Hide "Did you mean …?" schema hints from clients (the explorer is off). */
  readonly hideSchemaDetails: boolean;
  /** Answer `__schema` and `__type` (WFS_INTROSPECTION); the router's `_service` is always served. */
  readonly introspection: boolean;
  /** Plugins that run after the subgraph's own (metrics, logs, tracing, demo notices). */
  readonly plugins?: ReadonlyArray<ApolloServerPlugin<GraphQLContext>>;
  readonly limits?: QueryLimits;
  /** Counts a document refused before execution (query_document, query_cost): the Observer port's `refused`. */
  readonly refused?: (reason: RefusalReason) => void;
  /**
   * A copy of the subgraph schema that Apollo Server never instruments, for compiled
   * queries (execution.ts), asked for at the first compilation; the server shares it with
   * the live socket. Default: a copy of its own.
   */
  readonly executionSchema?: () => GraphQLSchema;
  /** Executions by graphql-js before an operation is compiled (default execution.ts's COMPILE_AFTER; tests lower it). */
  readonly compileAfter?: number;
  /** Apollo's `stringifyResult` (default: compact JSON); the shared-requests one writes a shared answer's JSON once. */
  readonly stringifyResult?: (value: object) => string;
}

/** What a client asking for `__schema` or `__type` reads while introspection is off. */
export const INTROSPECTION_OFF =
  'introspection (__schema, __type) is off on this subgraph: the operator turns it on with WFS_INTROSPECTION=true (off by default with NODE_ENV=production); the router\'s _service { sdl } is always served';

/** The subgraph's Apollo Server: schema, query limits, error formatting and plugins; not started. */
export function createApolloServer(options: ApolloServerOptions): ApolloServer<GraphQLContext> {
  const limits = options.limits ?? DEFAULT_QUERY_LIMITS;
  const refused = options.refused ?? (() => undefined);
  const formatError = createErrorFormatter((error) => options.logger.error({ err: error }, 'unexpected error in a resolver'));
  return new ApolloServer<GraphQLContext>({
    // Apollo's pipeline with a compiled executor for documents seen again (execution.ts).
    gateway: new CompiledExecution(createSubgraphSchema(), options.executionSchema ?? createSubgraphSchema, { ...(options.compileAfter !== undefined && { compileAfter: options.compileAfter }) }),
    introspection: options.introspection,
    logger: options.logger,
    parseOptions: limitParseOptions(limits),
    validationRules: limitRules(limits),
    allowBatchedHttpRequests: false,
    // Bounded by the memory entries really hold, not by their JSON (documentStore.ts).
    documentStore: createDocumentStore(),
    persistedQueries: { cache: createPersistedQueryCache() },
    includeStacktraceInErrorResponses: false,
    hideSchemaDetailsFromClientErrors: options.hideSchemaDetails,
    // Compact JSON: Apollo's default indents every answer, which costs time and bytes.
    stringifyResult: options.stringifyResult ?? ((value) => JSON.stringify(value)),
    formatError: (formatted: GraphQLFormattedError, error: unknown) => {
      // The limits graphql-js words as something else, worded as the subscribe gate words them (../admission/document.ts).
      const limit = wordDocumentError(formatted);
      if (limit) return limit;
      // Apollo's refusal tells the client to "pass introspection: true to ApolloServer",
      // which no operator of this subgraph can do: name the setting instead.
      if (formatted.extensions?.['validationErrorCode'] === ApolloServerValidationErrorCode.INTROSPECTION_DISABLED) {
        return { ...formatted, message: INTROSPECTION_OFF };
      }
      // Apollo's automatic persisted queries answer a wrong hash (HTTP 400) without a code, so it would read as our fault.
      if (formatted.message === 'provided sha does not match query') {
        return { message: 'extensions.persistedQuery.sha256Hash is not the SHA-256 of the query; send the lower-case hex SHA-256 of the exact query text', extensions: { code: 'BAD_REQUEST' } };
      }
      return formatError(formatted, error);
    },
    // The process owns SIGTERM and SIGINT (src/main.ts: readiness off, drain, close the
    // upstream side and Redis, flush traces, exit 0). Apollo's own handlers would race
    // it: its stop() never releases a concurrent caller after a successful stop (5.5.1),
    // so our ordered close never ran; with Redis connected the process hung until the
    // 20 s force exit, and without it exited before the trace flush.
    stopOnTerminationSignals: false,
    // The cost limit needs the operation's variables, so it runs once the operation is
    // resolved (after validation, before any resolver), not as a validation rule.
    plugins: subgraphPlugins([documentRefusals<GraphQLContext>(refused), costLimit<GraphQLContext>(limits.maxCost, refused), ApolloServerPluginDrainHttpServer({ httpServer: options.httpServer }), ...(options.plugins ?? [])]),
  });
}
