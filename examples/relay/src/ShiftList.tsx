import { graphql, usePaginationFragment } from 'react-relay';
import type { ShiftList_query$key } from './__generated__/ShiftList_query.graphql';
import { ShiftCard } from './ShiftCard';

/**
 * The rota, both ways: `first`/`after` to read on, `last`/`before` to go back from a
 * cursor (bidirectional `@connection`). Page sizes 1 to 100.
 *
 * `first` has no defaultValue on purpose: Relay puts a variable's default in place of
 * an explicit null, so paging backward (`last`, with `first: null`) would send `first`
 * and `last` together, which the API refuses (BAD_USER_INPUT). The page size comes
 * from the query that spreads this fragment (`@arguments(first: 50)`).
 */
export const ShiftListFragment = graphql`
  fragment ShiftList_query on Query
  @refetchable(queryName: "ShiftListPaginationQuery")
  @argumentDefinitions(
    first: { type: "Int" }
    after: { type: "String" }
    last: { type: "Int" }
    before: { type: "String" }
  ) {
    shifts(first: $first, after: $after, last: $last, before: $before) @connection(key: "ShiftList_shifts") {
      edges {
        cursor
        node {
          nodeId
          ...ShiftCard_shift
        }
      }
    }
  }
`;

export function ShiftList(props: { query: ShiftList_query$key }) {
  const { data, hasNext, loadNext, isLoadingNext } = usePaginationFragment(ShiftListFragment, props.query);
  return (
    <section>
      {data.shifts?.edges.map((edge) => <ShiftCard key={edge.node.nodeId} shift={edge.node} />)}
      {hasNext && (
        <button type="button" disabled={isLoadingNext} onClick={() => loadNext(50)}>
          More shifts
        </button>
      )}
    </section>
  );
}
