import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { unwrapResolverError } from '@apollo/server/errors';
import { isUpstreamError, type UpstreamErrorCode } from '../upstream/errors';

/** Every `extensions.code` this subgraph sends. */
export type ErrorCode =
  | 'UNAUTHENTICATED'
  | 'BAD_USER_INPUT'
  | 'INTERNAL_SERVER_ERROR'
  | UpstreamErrorCode;

export function graphQLError(code: ErrorCode, message: string, extra: Record<string, unknown> = {}): GraphQLError {
  return new GraphQLError(message, { extensions: { code, ...extra } });
}

export function badUserInput(message: string): GraphQLError {
  return graphQLError('BAD_USER_INPUT', message);
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
        message: original.message,
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
