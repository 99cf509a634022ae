// The generated documents, copied to ./gql (test/unit/frontend.test.ts does), imported
// the way an ESM project must: with the file extension.
import { LocationPickerDocument, type LocationPickerQuery } from './gql/graphql.js';
import { graphql } from './gql/index.js';

export const names = (data: LocationPickerQuery): string[] => data.locations?.edges.map((edge) => edge.node.name) ?? [];
export const document = LocationPickerDocument;
export const inline = graphql;
