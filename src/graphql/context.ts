import type { IncomingHttpHeaders } from 'node:http';
import DataLoader from 'dataloader';
import type { GraphQLError } from 'graphql';
import type { ListPage, WfsClient } from '../upstream/client';
import type { PageRef } from '../upstream/pageReference';
import { isMalformed, type ListName, type LocationRecord, type RecordOf, type ShiftRecord } from '../upstream/records';
import { checkConnectionArgs, resolveConnection, type ConnectionArgs, type ConnectionPage } from './connections';
import type { CursorCodec } from './cursor';
import type { EntityIndexes } from './entityIndex';
import { graphQLError } from './errors';
import type { IdentityResolver } from './identity';

/** One tenant's data, for one GraphQL request. */
export interface TenantData {
  readonly tenantId: string;
  readonly locations: DataLoader<string, LocationRecord | null>;
  readonly shifts: DataLoader<string, ShiftRecord | null>;
  connection<L extends ListName>(list: L, args: ConnectionArgs): Promise<ConnectionPage<RecordOf[L]>>;
}

/** The typed context every resolver receives. */
export interface GraphQLContext {
  /** The request's tenant and its loaders; rejects with UNAUTHENTICATED or FORBIDDEN. */
  tenant(): Promise<TenantData>;
  /** Errors that do not fail a field (a malformed item skipped in a page); sent with the response. */
  readonly itemErrors: GraphQLError[];
}

/** Process-wide services the per-request context is built from. */
export interface ContextServices {
  readonly client: WfsClient;
  readonly cursors: CursorCodec;
  readonly indexes: EntityIndexes;
  readonly identify: IdentityResolver;
}

/**
 * The tenant is worked out lazily, on first use: the router's `_service` query and
 * introspection carry no tenant and must still be answered.
 */
export function createContext(services: ContextServices, headers: IncomingHttpHeaders, signal: AbortSignal): GraphQLContext {
  const itemErrors: GraphQLError[] = [];
  let tenant: Promise<TenantData> | undefined;
  return {
    itemErrors,
    tenant() {
      tenant ??= services.identify(headers).then((tenantId) => tenantData(services, tenantId, signal, itemErrors));
      return tenant;
    },
  };
}

function tenantData(services: ContextServices, tenantId: string, signal: AbortSignal, itemErrors: GraphQLError[]): TenantData {
  // Within one request the same page is fetched once, however many fields need it.
  const pages = new Map<string, Promise<ListPage<unknown>>>();
  const fetchPage = <L extends ListName>(list: L, ref: PageRef | null, pageSize: number): Promise<ListPage<RecordOf[L]>> => {
    const key = `${list}\u0000${pageSize}\u0000${ref ?? ''}`;
    let page = pages.get(key);
    if (!page) {
      page = services.client.listPage(tenantId, list, ref, signal, pageSize);
      pages.set(key, page);
      page.catch(() => pages.delete(key));
    }
    return page as Promise<ListPage<RecordOf[L]>>;
  };

  const entityLoader = <L extends ListName>(list: L) =>
    new DataLoader<string, RecordOf[L] | null>(
      async (ids) => {
        try {
          return await services.indexes.for<RecordOf[L]>(tenantId, list).lookup(ids, (ref, pageSize) => fetchPage(list, ref, pageSize));
        } catch (error) {
          return ids.map(() => error as Error);
        }
      },
      { maxBatchSize: 1000 },
    );
  const loaders = { locations: entityLoader('locations'), shifts: entityLoader('shifts') };

  return {
    tenantId,
    ...loaders,
    async connection(list, args) {
      const request = checkConnectionArgs(args);
      const index = services.indexes.for<RecordOf[typeof list]>(tenantId, list);
      return resolveConnection<RecordOf[typeof list]>(
        {
          fetchPage: async (ref, pageSize) => {
            const page = await fetchPage(list, ref, pageSize);
            const records = page.items.filter((item): item is RecordOf[typeof list] => !isMalformed(item));
            // The tenant's index learns the records (a later `_entities` or
            // `Shift.location` then needs no scan). The request's DataLoader is not
            // primed: it would allocate a promise per record for lookups that the
            // index answers anyway.
            index.prime(records);
            return page;
          },
          decodeCursor: (cursor, argument) => services.cursors.decode(cursor, tenantId, list, argument),
          encodeCursor: (position) => services.cursors.encode(tenantId, list, position),
          reportMalformed: (item) => {
            itemErrors.push(graphQLError('UPSTREAM_BAD_RESPONSE', `an item of ${list} was skipped: ${item.reason}`));
          },
        },
        request,
      );
    },
  };
}
