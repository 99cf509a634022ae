/**
 * The subscription fields every resource gets from its descriptor, when the schema
 * declares them: `Subscription.<lookup>Changes` (`shiftChanges(filter)`,
 * `locationChanges`) and its change type (`ShiftChange { kind nodeId shift }`). The
 * poll itself is the live hub's (src/live); this turns its events into payloads and
 * its errors into GraphQL errors with the query error codes.
 */
import type { GraphQLResolverMap } from '@apollo/subgraph';
import { GraphQLError } from 'graphql';
import { LiveClosedError, LiveLimitError, SlowConsumerError, type LiveEvent } from '../../live/hub';
import type { AnyResource, ListFilter } from '../../upstream/resources';
import type { GraphQLContext } from '../data/context';
import { encodeNodeId } from '../data/node';
import { filterOf, lookupField } from './resourceResolvers';

type Resolvers = GraphQLResolverMap<GraphQLContext>;

/** The subscription field of a resource: `Shift` → `shiftChanges`. */
export function changesField(resource: AnyResource): string {
  return `${lookupField(resource)}Changes`;
}

export function liveResolvers(resources: Iterable<AnyResource>): Resolvers {
  const subscription: Record<string, unknown> = {};
  for (const resource of resources) {
    const recordField = lookupField(resource);
    subscription[changesField(resource)] = {
      subscribe: async (_parent: unknown, args: { filter?: Record<string, unknown> | null }, context: GraphQLContext) => {
        const live = context.live;
        if (!live) throw new GraphQLError('subscriptions are served over WebSocket (graphql-ws, subprotocol graphql-transport-ws) at this path, not over HTTP', { extensions: { code: 'BAD_REQUEST' } });
        const tenant = await context.tenant();
        // The grant, as a query's first read of the list checks it (FORBIDDEN when the scope is withdrawn).
        await tenant.reader.authorize(resource);
        const filter = args.filter && resource.filterFrom ? (filterOf(resource, args.filter) as ListFilter) : undefined;
        try {
          return live.hub.subscribe(tenant.tenantId, resource, filter, live.ended, live.transport);
        } catch (error) {
          if (error instanceof LiveLimitError) throw new GraphQLError(error.message, { extensions: { code: error.code } });
          throw error;
        }
      },
      resolve: (event: LiveEvent, _args: unknown, context: GraphQLContext) => {
        context.live?.renew();
        if ('error' in event) throw endOf(event.error);
        return { kind: event.kind, nodeId: encodeNodeId(resource.typename, event.id), [recordField]: event.record ?? null };
      },
    };
  }
  return { Subscription: subscription } as Resolvers;
}

/** The error a subscription ends with: the upstream's own (FORBIDDEN, UPSTREAM_*) passes as thrown, for the error formatter. */
function endOf(error: Error): Error {
  if (error instanceof SlowConsumerError || error instanceof LiveClosedError) return new GraphQLError(error.message, { extensions: { code: 'SERVICE_UNAVAILABLE' } });
  return error;
}
