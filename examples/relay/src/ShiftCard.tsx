import { graphql, useRefetchableFragment } from 'react-relay';
import type { ShiftCard_shift$key } from './__generated__/ShiftCard_shift.graphql';

/** A shift that can refresh itself through `node(nodeId:)` (`ShiftCardRefetchQuery`). */
export const ShiftCardFragment = graphql`
  fragment ShiftCard_shift on Shift @refetchable(queryName: "ShiftCardRefetchQuery") {
    id
    start
    end
    location {
      id
      name
    }
  }
`;

export function ShiftCard(props: { shift: ShiftCard_shift$key }) {
  const [shift, refetch] = useRefetchableFragment(ShiftCardFragment, props.shift);
  return (
    <article>
      <h3>
        {shift.start} to {shift.end}
      </h3>
      <p>{shift.location?.name ?? 'no location'}</p>
      <button type="button" onClick={() => refetch({}, { fetchPolicy: 'network-only' })}>
        Refresh
      </button>
    </article>
  );
}
