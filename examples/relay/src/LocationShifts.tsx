import { graphql, usePaginationFragment } from 'react-relay';
import type { LocationShifts_location$key } from './__generated__/LocationShifts_location.graphql';
import { ShiftCard } from './ShiftCard';

/**
 * One location's week: `Location.shifts` filtered to [startsFrom, startsBefore), paged
 * forward. `@refetchable` on a `Location` fragment refetches through `node(nodeId:)`,
 * so Relay can load the next page of this one location's shifts on its own. Cursors
 * belong to this location and these dates; another week is a new fragment reference.
 */
export const LocationShiftsFragment = graphql`
  fragment LocationShifts_location on Location
  @refetchable(queryName: "LocationShiftsPaginationQuery")
  @argumentDefinitions(
    count: { type: "Int", defaultValue: 20 }
    cursor: { type: "String" }
    startsFrom: { type: "DateTime" }
    startsBefore: { type: "DateTime" }
  ) {
    name
    shifts(first: $count, after: $cursor, startsFrom: $startsFrom, startsBefore: $startsBefore) @connection(key: "LocationShifts_shifts") {
      edges {
        node {
          nodeId
          ...ShiftCard_shift
        }
      }
    }
  }
`;

export function LocationShifts(props: { location: LocationShifts_location$key }) {
  const { data, hasNext, loadNext, isLoadingNext } = usePaginationFragment(LocationShiftsFragment, props.location);
  return (
    <section>
      <h3>{data.name}</h3>
      {data.shifts?.edges.map((edge) => <ShiftCard key={edge.node.nodeId} shift={edge.node} />)}
      {hasNext && (
        <button type="button" disabled={isLoadingNext} onClick={() => loadNext(20)}>
          More shifts
        </button>
      )}
    </section>
  );
}
