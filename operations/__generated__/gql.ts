/* eslint-disable */
import * as types from './graphql.js';
import type { TypedDocumentNode as DocumentNode } from '@graphql-typed-document-node/core';

/**
 * Map of all GraphQL operations in the project.
 *
 * This map has several performance disadvantages:
 * 1. It is not tree-shakeable, so it will include all operations in the project.
 * 2. It is not minifiable, so the string of a GraphQL query will be multiple times inside the bundle.
 * 3. It does not support dead code elimination, so it will add unused operations.
 *
 * Therefore it is highly recommended to use the babel or swc plugin for production.
 * Learn more about it here: https://the-guild.dev/graphql/codegen/plugins/presets/preset-client#reducing-bundle-size
 */
type Documents = {
    "query LocationPicker($after: String) {\n  locations(first: 100, after: $after) {\n    edges {\n      cursor\n      node {\n        id\n        name\n      }\n    }\n    pageInfo {\n      hasNextPage\n      endCursor\n    }\n  }\n}": typeof types.LocationPickerDocument,
    "query ShiftsPage($first: Int!, $after: String) {\n  shifts(first: $first, after: $after) {\n    edges {\n      cursor\n      node {\n        id\n        start\n        end\n        location {\n          name\n        }\n      }\n    }\n    pageInfo {\n      hasNextPage\n      hasPreviousPage\n      startCursor\n      endCursor\n    }\n  }\n}": typeof types.ShiftsPageDocument,
    "query WeekRota($locationId: ID!, $weekStart: DateTime!, $weekEnd: DateTime!, $first: Int = 100, $after: String) {\n  location(id: $locationId) {\n    id\n    name\n    shifts(\n      first: $first\n      after: $after\n      startsFrom: $weekStart\n      startsBefore: $weekEnd\n    ) {\n      nodes {\n        id\n        start\n        end\n        user {\n          id\n        }\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n}": typeof types.WeekRotaDocument,
};
const documents: Documents = {
    "query LocationPicker($after: String) {\n  locations(first: 100, after: $after) {\n    edges {\n      cursor\n      node {\n        id\n        name\n      }\n    }\n    pageInfo {\n      hasNextPage\n      endCursor\n    }\n  }\n}": types.LocationPickerDocument,
    "query ShiftsPage($first: Int!, $after: String) {\n  shifts(first: $first, after: $after) {\n    edges {\n      cursor\n      node {\n        id\n        start\n        end\n        location {\n          name\n        }\n      }\n    }\n    pageInfo {\n      hasNextPage\n      hasPreviousPage\n      startCursor\n      endCursor\n    }\n  }\n}": types.ShiftsPageDocument,
    "query WeekRota($locationId: ID!, $weekStart: DateTime!, $weekEnd: DateTime!, $first: Int = 100, $after: String) {\n  location(id: $locationId) {\n    id\n    name\n    shifts(\n      first: $first\n      after: $after\n      startsFrom: $weekStart\n      startsBefore: $weekEnd\n    ) {\n      nodes {\n        id\n        start\n        end\n        user {\n          id\n        }\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n}": types.WeekRotaDocument,
};

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 *
 *
 * @example
 * ```ts
 * const query = graphql(`query GetUser($id: ID!) { user(id: $id) { name } }`);
 * ```
 *
 * The query argument is unknown!
 * Please regenerate the types.
 */
export function graphql(source: string): unknown;

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "query LocationPicker($after: String) {\n  locations(first: 100, after: $after) {\n    edges {\n      cursor\n      node {\n        id\n        name\n      }\n    }\n    pageInfo {\n      hasNextPage\n      endCursor\n    }\n  }\n}"): (typeof documents)["query LocationPicker($after: String) {\n  locations(first: 100, after: $after) {\n    edges {\n      cursor\n      node {\n        id\n        name\n      }\n    }\n    pageInfo {\n      hasNextPage\n      endCursor\n    }\n  }\n}"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "query ShiftsPage($first: Int!, $after: String) {\n  shifts(first: $first, after: $after) {\n    edges {\n      cursor\n      node {\n        id\n        start\n        end\n        location {\n          name\n        }\n      }\n    }\n    pageInfo {\n      hasNextPage\n      hasPreviousPage\n      startCursor\n      endCursor\n    }\n  }\n}"): (typeof documents)["query ShiftsPage($first: Int!, $after: String) {\n  shifts(first: $first, after: $after) {\n    edges {\n      cursor\n      node {\n        id\n        start\n        end\n        location {\n          name\n        }\n      }\n    }\n    pageInfo {\n      hasNextPage\n      hasPreviousPage\n      startCursor\n      endCursor\n    }\n  }\n}"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "query WeekRota($locationId: ID!, $weekStart: DateTime!, $weekEnd: DateTime!, $first: Int = 100, $after: String) {\n  location(id: $locationId) {\n    id\n    name\n    shifts(\n      first: $first\n      after: $after\n      startsFrom: $weekStart\n      startsBefore: $weekEnd\n    ) {\n      nodes {\n        id\n        start\n        end\n        user {\n          id\n        }\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n}"): (typeof documents)["query WeekRota($locationId: ID!, $weekStart: DateTime!, $weekEnd: DateTime!, $first: Int = 100, $after: String) {\n  location(id: $locationId) {\n    id\n    name\n    shifts(\n      first: $first\n      after: $after\n      startsFrom: $weekStart\n      startsBefore: $weekEnd\n    ) {\n      nodes {\n        id\n        start\n        end\n        user {\n          id\n        }\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n}"];

export function graphql(source: string) {
  return (documents as any)[source] ?? {};
}

export type DocumentType<TDocumentNode extends DocumentNode<any, any>> = TDocumentNode extends DocumentNode<  infer TType,  any>  ? TType  : never;