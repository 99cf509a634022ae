import type { ApolloServerPlugin, BaseContext } from '@apollo/server';
import type * as InlineTraceModule from '@apollo/server/plugin/inlineTrace';

/** The header a router (Apollo Router, Hive Gateway, @apollo/gateway) sends to ask for a federated trace. */
export const TRACE_HEADER = 'apollo-federation-include-trace';

/**
 * Federated tracing (`ftv1`) with Apollo's own `ApolloServerPluginInlineTrace`, for
 * the requests whose router asks for it, and nothing at all for the others: Apollo's
 * plugin builds a trace tree for every request before it looks at the header, and its
 * module (with the protobuf messages) is loaded at the first traced request, not at
 * start-up. Installed beside `ApolloServerPluginInlineTraceDisabled()` (graphql's
 * `plugins.ts`), which keeps Apollo from adding its own for a subgraph schema.
 *
 * A router samples the requests it traces (Apollo Router: 1 % by default); at that
 * rate Apollo's plugin costs the same as the faster one of our own this replaced
 * (bench/README.md, "Inline trace at a router's sampling").
 */
export function inlineTrace(): ApolloServerPlugin<BaseContext> {
  let apollo: ApolloServerPlugin<BaseContext> | undefined;
  return {
    async requestDidStart(requestContext) {
      if (requestContext.request.http?.headers.get(TRACE_HEADER) !== 'ftv1') return;
      apollo ??= (require('@apollo/server/plugin/inlineTrace') as typeof InlineTraceModule).ApolloServerPluginInlineTrace();
      return apollo.requestDidStart?.(requestContext);
    },
  };
}
