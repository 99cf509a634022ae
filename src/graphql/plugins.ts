import type { ApolloServerPlugin, BaseContext } from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
  ApolloServerPluginSchemaReportingDisabled,
  ApolloServerPluginUsageReportingDisabled,
} from '@apollo/server/plugin/disabled';
import { ApolloServerPluginInlineTrace } from '@apollo/server/plugin/inlineTrace';
import type { Metrics } from '../metrics';
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
export function subgraphPlugins(metrics: Metrics, extra: ReadonlyArray<ApolloServerPlugin<GraphQLContext>> = []): Array<ApolloServerPlugin<GraphQLContext>> {
  return [
    ApolloServerPluginCacheControlDisabled(),
    ApolloServerPluginUsageReportingDisabled(),
    ApolloServerPluginSchemaReportingDisabled(),
    ApolloServerPluginLandingPageDisabled(),
    ApolloServerPluginInlineTraceDisabled(),
    inlineTraceWhenAsked(),
    itemErrorsAndMetrics(metrics),
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
 * were skipped) and counts operations and error codes. The labelled counters are
 * looked up once per label value, not hashed again per request.
 */
export function itemErrorsAndMetrics(metrics: Metrics): ApolloServerPlugin<GraphQLContext> {
  const byOperation = new Map<string, { inc(): void }>();
  const countOperation = (type: string) => {
    let counter = byOperation.get(type);
    if (!counter) byOperation.set(type, (counter = metrics.graphqlRequests.labels({ operation_type: type })));
    counter.inc();
  };
  const hooks: Awaited<ReturnType<NonNullable<ApolloServerPlugin<GraphQLContext>['requestDidStart']>>> = {
    async didResolveOperation({ operation }) {
      countOperation(operation?.operation ?? 'unknown');
    },
    async willSendResponse({ response, contextValue }) {
      if (response.body.kind !== 'single') return;
      const result = response.body.singleResult;
      if (contextValue.itemErrors.length > 0) {
        result.errors = [...(result.errors ?? []), ...contextValue.itemErrors.map((error) => error.toJSON())];
      }
      if (result.errors) for (const error of result.errors) metrics.graphqlErrors.inc({ code: String(error.extensions?.code ?? 'UNKNOWN') });
    },
  };
  return {
    // One shared, stateless set of hooks: no closure allocated per request.
    async requestDidStart() {
      return hooks;
    },
  };
}
