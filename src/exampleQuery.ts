/** The query the explorer opens with and the demo banner prints. */
export const EXAMPLE_QUERY = `# Locations, and the first shifts with where they happen.
query Rota {
  locations(first: 10) {
    nodes { id name }
  }
  shifts(first: 10) {
    edges {
      cursor
      node { id start end location { name } user { id } }
    }
    pageInfo { hasNextPage endCursor }
  }
}
`;
