/**
 * Apollo Client 4 against the router, with the generated documents: the client with a
 * cache that pages our Relay connections, and two hooks. README "For frontend teams"
 * shows this file; test/unit/frontend.test.ts compiles it and the README's snippets.
 */
import { ApolloClient, HttpLink, InMemoryCache } from '@apollo/client';
import { useQuery } from '@apollo/client/react';
import { relayStylePagination } from '@apollo/client/utilities';
import { LocationPickerDocument, ShiftsPageDocument } from '../../operations/__generated__/graphql';

export function createClient(uri: string, token: string): ApolloClient {
  return new ApolloClient({
    link: new HttpLink({ uri, headers: { authorization: `Bearer ${token}` } }),
    cache: new InMemoryCache({
      typePolicies: {
        // Each connection is one cached list that `fetchMore({ variables: { after } })`
        // extends. The arguments that pick a different list are its key; paging
        // arguments (first, after, last, before) are not.
        Query: {
          fields: {
            locations: relayStylePagination(),
            shifts: relayStylePagination(['filter']),
          },
        },
        Location: {
          fields: {
            shifts: relayStylePagination(['startsFrom', 'startsBefore']),
          },
        },
      },
      // `node(nodeId:)` answers the Node interface: the cache must know its implementations
      // to match `... on Location` / `... on Shift` fragments against it.
      possibleTypes: { Node: ['Location', 'Shift'] },
    }),
  });
}

/**
 * Every location for a picker, 100 per page; `loadMore` while `hasMore`. The list is read
 * from `edges`: relayStylePagination() appends each page's edges to the cached ones (a
 * connection's `nodes` it does not merge: read from them, the list would stay one page).
 */
export function useLocations() {
  const { data, loading, error, fetchMore } = useQuery(LocationPickerDocument, { variables: { after: null } });
  const pageInfo = data?.locations?.pageInfo;
  return {
    locations: data?.locations?.edges.map((edge) => edge.node) ?? [],
    loading,
    // A FORBIDDEN or UPSTREAM_* error on `locations` arrives here, with `locations` null.
    error,
    hasMore: pageInfo?.hasNextPage ?? false,
    loadMore: () => fetchMore({ variables: { after: pageInfo?.endCursor ?? null } }),
  };
}

/** Shifts for infinite scroll. */
export function useShifts(pageSize: number) {
  const { data, fetchMore } = useQuery(ShiftsPageDocument, { variables: { first: pageSize, after: null } });
  return {
    shifts: data?.shifts?.edges.map((edge) => edge.node) ?? [],
    loadMore: () => fetchMore({ variables: { after: data?.shifts?.pageInfo.endCursor ?? null } }),
  };
}
