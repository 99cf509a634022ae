import { graphql, useRefetchableFragment } from 'react-relay';
import type { LocationCard_location$key } from './__generated__/LocationCard_location.graphql';

/**
 * A location that can refresh itself: `@refetchable` on a `Location` fragment makes
 * relay-compiler write `LocationCardRefetchQuery`, which asks `node(nodeId: $nodeId)`.
 */
export const LocationCardFragment = graphql`
  fragment LocationCard_location on Location @refetchable(queryName: "LocationCardRefetchQuery") {
    id
    name
  }
`;

export function LocationCard(props: { location: LocationCard_location$key }) {
  const [location, refetch] = useRefetchableFragment(LocationCardFragment, props.location);
  return (
    <article>
      <h3>{location.name}</h3>
      <button type="button" onClick={() => refetch({}, { fetchPolicy: 'network-only' })}>
        Refresh
      </button>
    </article>
  );
}
