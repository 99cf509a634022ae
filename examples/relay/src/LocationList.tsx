import { graphql, usePaginationFragment } from 'react-relay';
import type { LocationList_query$key } from './__generated__/LocationList_query.graphql';
import { LocationCard } from './LocationCard';

/**
 * Every location, a page at a time (`first` 1 to 100). relay-compiler writes
 * `LocationListPaginationQuery`; `@connection` merges its pages into one list.
 */
export const LocationListFragment = graphql`
  fragment LocationList_query on Query
  @refetchable(queryName: "LocationListPaginationQuery")
  @argumentDefinitions(count: { type: "Int", defaultValue: 20 }, cursor: { type: "String" }) {
    locations(first: $count, after: $cursor) @connection(key: "LocationList_locations") {
      edges {
        cursor
        node {
          nodeId
          ...LocationCard_location
        }
      }
    }
  }
`;

export function LocationList(props: { query: LocationList_query$key }) {
  const { data, hasNext, loadNext, isLoadingNext } = usePaginationFragment(LocationListFragment, props.query);
  return (
    <section>
      {data.locations?.edges.map((edge) => <LocationCard key={edge.node.nodeId} location={edge.node} />)}
      {hasNext && (
        <button type="button" disabled={isLoadingNext} onClick={() => loadNext(20)}>
          More locations
        </button>
      )}
    </section>
  );
}
