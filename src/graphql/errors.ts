/**
 * The error vocabulary of the GraphQL side, used by server/, data/ and resolvers/ alike:
 * every `extensions.code` the subgraph sends, the helpers that build those errors, the
 * sentence a client reads for each upstream failure, and Apollo's `formatError`.
 */
import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { unwrapResolverError } from '@apollo/server/errors';
import { isUpstreamError, type UpstreamError, type UpstreamErrorCode } from '../upstream/errors';
import type { FailureCause } from '../upstream/failureCause';

/**
 * Every `extensions.code` this subgraph sends: its own, Apollo Server's and graphql-js's
 * for a document that does not parse or validate (the subscribe gate sends the same,
 * graphql/admission/document.ts), and the refusals' (graphql/admission/refusals.ts).
 */
export type ErrorCode =
  | 'UNAUTHENTICATED'
  | 'BAD_USER_INPUT'
  | 'BAD_REQUEST'
  | 'SERVICE_UNAVAILABLE'
  | 'GRAPHQL_PARSE_FAILED'
  | 'GRAPHQL_VALIDATION_FAILED'
  | 'PERSISTED_QUERY_NOT_FOUND'
  | 'PERSISTED_QUERY_NOT_SUPPORTED'
  | 'OPERATION_RESOLUTION_FAILURE'
  | 'INTERNAL_SERVER_ERROR'
  | UpstreamErrorCode;

export function graphQLError(code: ErrorCode, message: string, extra: Record<string, unknown> = {}): GraphQLError {
  return new GraphQLError(message, { extensions: { code, ...extra } });
}

export function badUserInput(message: string): GraphQLError {
  return graphQLError('BAD_USER_INPUT', message);
}

/**
 * What a client reads for each upstream failure. The error's own message is for the
 * operator: it names shard hosts, refused addresses, upstream paths and network error
 * codes, and goes to the "upstream call failed" log line (with the request id), never to
 * the client. The client gets its code, one of these sentences and `retryAfterSeconds`.
 */
const CLIENT_MESSAGES: Record<UpstreamErrorCode, string> = {
  UPSTREAM_UNAVAILABLE: 'the upstream is unavailable or did not answer in time; retry later',
  UPSTREAM_RATE_LIMITED: 'the upstream is rate limiting this tenant; retry later',
  UPSTREAM_UNAUTHORIZED: "the upstream did not accept this tenant's credentials or token; the subgraph's operators have the details",
  UPSTREAM_BAD_RESPONSE: 'the upstream answered with something that is not its documented shape',
  UPSTREAM_MISCONFIGURED: "this tenant's upstream access is misconfigured (its token's tenant or api_base was refused); the subgraph's operators have the details",
  FORBIDDEN: 'this tenant is not allowed to read this',
};

const CLIENT_MESSAGES_BY_CAUSE: Partial<Record<FailureCause, string>> = {
  breaker_open: 'the upstream shard is failing; calls to it are paused for a few seconds (circuit breaker open)',
  retry_after_window: 'the upstream asked for a longer pause than this request can wait; retry later',
};

/**
 * Messages built only from what the client already knows (the list, the scope, its
 * own tenant, the request's budget) pass through: they say what to change.
 */
const OWN_WORDS_CAUSES: ReadonlySet<FailureCause> = new Set(['scope_missing', 'call_budget_spent', 'broken_page_chain']);
const OWN_WORDS_CODES: ReadonlySet<UpstreamErrorCode> = new Set(['FORBIDDEN']);

/**
 * Whether an error of an answer came from this request's moment rather than from the
 * upstream (UpstreamError's `momentary`): such an answer is not shared with identical requests.
 */
export function isMomentaryFailure(error: GraphQLError): boolean {
  const original = unwrapResolverError(error);
  return isUpstreamError(original) && original.details.momentary === true;
}

/** The sentence a client reads for an upstream failure (see CLIENT_MESSAGES). */
export function clientMessage(error: UpstreamError): string {
  const cause = error.details.cause;
  if ((cause && OWN_WORDS_CAUSES.has(cause)) || OWN_WORDS_CODES.has(error.code)) return error.message;
  return (cause && CLIENT_MESSAGES_BY_CAUSE[cause]) ?? CLIENT_MESSAGES[error.code];
}

/**
 * Apollo's `formatError`: upstream failures become their code; anything we did
 * not expect is logged and masked, so no internal detail (or secret) leaks.
 */
export function createErrorFormatter(onUnexpected: (error: unknown) => void) {
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const original = unwrapResolverError(error);
    if (isUpstreamError(original)) {
      return {
        ...formatted,
        message: clientMessage(original),
        extensions: {
          code: original.code,
          ...(original.details.retryAfterSeconds !== undefined && { retryAfterSeconds: original.details.retryAfterSeconds }),
        },
      };
    }
    if (original instanceof GraphQLError || formatted.extensions?.code !== 'INTERNAL_SERVER_ERROR') {
      // Apollo and graphql-js errors (validation, parsing, our own GraphQLErrors): already safe.
      const { stacktrace: _stacktrace, ...extensions } = formatted.extensions ?? {};
      return { ...formatted, extensions };
    }
    onUnexpected(original);
    return { message: 'Internal server error', ...(formatted.path && { path: formatted.path }), extensions: { code: 'INTERNAL_SERVER_ERROR' } };
  };
}
