/**
 * The resolvers every registered resource gets without writing one: its connection and
 * lookup fields on `Query`, `__resolveReference` and `nodeId`; plus `loadEntity` and
 * `childConnection` for the relations in resolvers/<Type>.ts. The schema merges them with
 * the others through `mergeTypeModules` (merge.ts), which refuses a field defined twice.
 */
import type { GraphQLResolverMap } from '@apollo/subgraph';
import type { AnyResource, Resource, UpstreamRecord } from '../../upstream/resources';
import type { ConnectionArgs, ConnectionPage } from '../data/connections';
import type { GraphQLContext } from '../data/context';
import type { TenantData } from '../data/tenantData';
import { badUserInput } from '../errors';
import { nodeIdOf } from '../data/node';

type Resolvers = GraphQLResolverMap<GraphQLContext>;

/**
 * One record of a resource by id, for the request's tenant: straight from the tenant's
 * entity index when it holds the record (a plain value, so graphql-js completes the
 * field without a promise: 100 shifts with their location are 100 such lookups), else
 * through the request's DataLoader, batched with the other misses. Null when the
 * tenant has no such record.
 */
export function loadEntity<R extends UpstreamRecord>(context: GraphQLContext, resource: Resource<R>, id: string): R | null | Promise<R | null> {
  const tenant = context.knownTenant();
  if (!tenant) return context.tenant().then((known) => known.loader(resource).load(id));
  return tenant.held(resource, id) ?? tenant.loader(resource).load(id);
}

/** The single-record lookup field of a resource: `Location` → `location`. */
export function lookupField(resource: AnyResource): string {
  return resource.typename.charAt(0).toLowerCase() + resource.typename.slice(1);
}

/**
 * The resolvers every resource gets from its descriptor, so its own resolver file holds
 * only its relations: the root connection (`locations(first, after, last, before,
 * filter)`), lookup by id (`location(id)`), `__resolveReference` (batched through the
 * per-request loader) and the connection's `nodes`.
 */
export function resourceResolvers(resources: Iterable<AnyResource>): Resolvers {
  const query: Record<string, unknown> = {};
  const resolvers: Record<string, unknown> = { Query: query };
  for (const resource of resources) {
    query[resource.name] = (_parent: unknown, args: ConnectionArgs & { filter?: Record<string, unknown> | null }, context: GraphQLContext) => {
      // The tenant first (an unidentified request is refused before its arguments are read).
      const connect = (tenant: TenantData) => {
        const filter = args.filter && resource.filterFrom ? filterOf(resource, args.filter) : undefined;
        return tenant.connection(resource, pagingOf(args), filter ? { filter } : {});
      };
      // Not async: with the tenant known (a shared request's check found it), the
      // connection's promise is the field's, with no frame of its own held through the wait.
      const known = context.knownTenant();
      return known ? connect(known) : context.tenant().then(connect);
    };
    query[lookupField(resource)] = (_parent: unknown, { id }: { id: string }, context: GraphQLContext) => loadEntity(context, resource, String(id));
    resolvers[resource.typename] = {
      // The router batches references; the DataLoader turns them into one index lookup.
      __resolveReference: ({ id }: { id: unknown }, context: GraphQLContext) => loadEntity(context, resource, String(id)),
      // Relay's global id, for a type that implements `Node` (ignored for one that does not).
      nodeId: nodeIdOf(resource.typename),
    };
    resolvers[`${resource.typename}Connection`] = {
      nodes: (connection: ConnectionPage<UpstreamRecord>) => connection.edges.map((edge) => edge.node),
    };
  }
  return resolvers as Resolvers;
}

/** A resource's filter from client arguments; one it refuses is BAD_USER_INPUT, before any upstream call. */
export function filterOf(resource: AnyResource, input: Record<string, unknown>): Record<string, unknown> {
  try {
    return resource.filterFrom!(input);
  } catch (error) {
    throw badUserInput(`invalid filter for ${resource.name}: ${(error as Error).message}`);
  }
}

function pagingOf(args: ConnectionArgs): ConnectionArgs {
  return { first: args.first ?? null, after: args.after ?? null, last: args.last ?? null, before: args.before ?? null };
}

/**
 * A child connection (`Location.shifts(first, after, …)`): the child resource's list
 * filtered to the parent, with the field's other arguments as filter. Its cursors are
 * bound to the parent and the filter, so one parent's cursor is refused under another.
 * `parentKey` names the filter field that holds the parent's id (`locationId`).
 */
export function childConnection(child: AnyResource, parentTypename: string, parentKey: string) {
  return async (parent: { id: string }, args: ConnectionArgs & Record<string, unknown>, context: GraphQLContext) => {
    if (!child.filterFrom) throw new Error(`the resource "${child.name}" has no filterFrom(), so it cannot be a child connection`);
    const { first, after, last, before, ...rest } = args;
    const filter = filterOf(child, { ...rest, [parentKey]: parent.id });
    return (await context.tenant()).connection(child, { first, after, last, before }, { filter, parent: { typename: parentTypename, id: parent.id } });
  };
}
