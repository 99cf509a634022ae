// An app's own operation, typed by the codegen.ts beside src/ (npx --yes graphql-codegen writes ./gql).
import { useQuery } from '@apollo/client/react';
import { graphql } from './gql';

const LocationPickerQuery = graphql(`
  query AppLocationPicker($after: String) {
    locations(first: 100, after: $after) {
      edges { cursor node { id name headcount } }
      pageInfo { hasNextPage endCursor }
    }
  }
`);

export function useLocationPicker() {
  const { data, fetchMore } = useQuery(LocationPickerQuery, { variables: { after: null } });
  // Typed from the document: { id: string; name: string; headcount: number | null }[]. From
  // `edges`, which relayStylePagination() merges page after page (`nodes` it does not).
  const locations = data?.locations?.edges.map((edge) => edge.node) ?? [];
  const pageInfo = data?.locations?.pageInfo;
  return { locations, hasMore: pageInfo?.hasNextPage ?? false, loadMore: () => fetchMore({ variables: { after: pageInfo?.endCursor ?? null } }) };
}
