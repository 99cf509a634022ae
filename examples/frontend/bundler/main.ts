// The generated documents, copied to ./gql (test/unit/frontend.test.ts does), imported
// the way bundler projects usually write it: without an extension.
import { ShiftsPageDocument, type ShiftsPageQuery } from './gql/graphql';
import { graphql } from './gql';

export const ends = (data: ShiftsPageQuery): Array<string | null> => data.shifts?.edges.map((edge) => edge.node.end ?? null) ?? [];
export const document = ShiftsPageDocument;
export const inline = graphql;
