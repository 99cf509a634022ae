/**
 * `UserReference`, the type codegen maps GraphQL's `User` to (`mappers` in codegen.ts):
 * the upstream has no user list, so it is no resource. Each list's record type and
 * tolerant mapper live in its module in `resources/`, once; they are re-exported here
 * for older imports.
 */
export type { LocationRecord, ShiftRecord, ListName, MalformedRecord, UpstreamRecord } from './resources';
export { isMalformed, normalizeDateTime } from './resources';

/** A user known only by id: another subgraph resolves the rest. */
export interface UserReference {
  readonly id: string;
}
