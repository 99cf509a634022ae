import type { ApolloServerPlugin } from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
  ApolloServerPluginSchemaReportingDisabled,
  ApolloServerPluginUsageReportingDisabled,
} from '@apollo/server/plugin/disabled';
import type { GraphQLContext } from '../data/context';

/**
 * The Apollo Server plugins this subgraph runs, and the built-in ones it switches off.
 *
 * Apollo Server installs some plugins by itself. Two of them hook every field
 * resolver of every request: cache control (we send no cache hints; the router
 * does not cache our answers) and, for a subgraph, the inline trace. Usage and
 * schema reporting start whenever APOLLO_KEY happens to be set; a subgraph reports
 * through the router, never on its own. Each is named here, so none comes back
 * silently; `bench/README.md` has what each one cost per request. The inline trace
 * is installed by the observability layer (`observability/inlineTrace.ts`): Apollo's,
 * only for the requests whose router asks for it.
 */
export function subgraphPlugins(extra: ReadonlyArray<ApolloServerPlugin<GraphQLContext>> = []): Array<ApolloServerPlugin<GraphQLContext>> {
  return [...builtInPluginsOff(), itemErrors(), ...extra] as Array<ApolloServerPlugin<GraphQLContext>>;
}

/** Apollo Server's built-in plugins this subgraph switches off (see `subgraphPlugins`); the bench's `apollo` target uses them too. */
export function builtInPluginsOff(): ApolloServerPlugin[] {
  return [
    ApolloServerPluginCacheControlDisabled(),
    ApolloServerPluginUsageReportingDisabled(),
    ApolloServerPluginSchemaReportingDisabled(),
    ApolloServerPluginLandingPageDisabled(),
    ApolloServerPluginInlineTraceDisabled(),
  ];
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
