import type { ApolloServerPlugin, BaseContext } from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
  ApolloServerPluginSchemaReportingDisabled,
  ApolloServerPluginUsageReportingDisabled,
} from '@apollo/server/plugin/disabled';
import { ApolloServerPluginInlineTrace } from '@apollo/server/plugin/inlineTrace';
import type { GraphQLContext } from './context';

/**
 * The Apollo Server plugins this subgraph runs, and the built-in ones it switches off.
 *
 * Apollo Server installs some plugins by itself. Two of them hook every field
 * resolver of every request: cache control (we send no cache hints; the router
 * does not cache our answers) and, for a subgraph, the inline trace. Usage and
 * schema reporting start whenever APOLLO_KEY happens to be set; a subgraph reports
 * through the router, never on its own. Each is named here, so none comes back
 * silently; `bench/README.md` has what each one cost per request.
 */
export function subgraphPlugins(extra: ReadonlyArray<ApolloServerPlugin<GraphQLContext>> = []): Array<ApolloServerPlugin<GraphQLContext>> {
  return [
    ApolloServerPluginCacheControlDisabled(),
    ApolloServerPluginUsageReportingDisabled(),
    ApolloServerPluginSchemaReportingDisabled(),
    ApolloServerPluginLandingPageDisabled(),
    ApolloServerPluginInlineTraceDisabled(),
    inlineTraceWhenAsked(),
    itemErrors(),
    ...extra,
  ] as Array<ApolloServerPlugin<GraphQLContext>>;
}

const TRACE_HEADER = 'apollo-federation-include-trace';

/**
 * Federated tracing (`ftv1`) for the requests whose router asks for it, and nothing
 * at all for the others. Apollo's own plugin already skips field instrumentation
 * without the header, but builds a trace tree for every request first; this wrapper
 * (installed with the built-in one switched off) does no work without the header.
 */
export function inlineTraceWhenAsked(): ApolloServerPlugin<BaseContext> {
  const inner = ApolloServerPluginInlineTrace();
  return {
    async requestDidStart(requestContext) {
      if (requestContext.request.http?.headers.get(TRACE_HEADER) !== 'ftv1') return;
      return inner.requestDidStart?.(requestContext);
    },
  };
}

/**
 * Appends the per-item errors collected during execution (malformed records that
 * were skipped), so that the plugins after it (the operation observer's metrics and
 * logs) see them with the rest.
 */
export function itemErrors(): ApolloServerPlugin<GraphQLContext> {
  const hooks: Awaited<ReturnType<NonNullable<ApolloServerPlugin<GraphQLContext>['requestDidStart']>>> = {
    async willSendResponse({ response, contextValue }) {
      if (response.body.kind !== 'single' || contextValue.itemErrors.length === 0) return;
      const result = response.body.singleResult;
      result.errors = [...(result.errors ?? []), ...contextValue.itemErrors.map((error) => error.toJSON())];
    },
  };
  return {
    // One shared, stateless set of hooks: no closure allocated per request.
    async requestDidStart() {
      return hooks;
    },
  };
}
