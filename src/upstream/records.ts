/**
 * Record types the GraphQL side maps to, gathered from the resource modules in
 * `resources/` (each list's record type and tolerant mapper live there, once).
 */
export type { LocationRecord, ShiftRecord, ListName, MalformedRecord, UpstreamRecord } from './resources';
export { isMalformed, normalizeDateTime } from './resources';

/** A user known only by id: another subgraph resolves the rest. */
export interface UserReference {
  readonly id: string;
}
