/**
 * What the rest of the server needs to know about one upstream list. Each list is
 * one module in this folder exporting one `Resource`; the registry (`index.ts`)
 * collects them, and the client, the GraphQL machinery and the emulator are built
 * from it, so a new list is one module, not edits in a dozen places.
 */

/** One item of a list page that did not have the documented shape. */
export interface MalformedRecord {
  readonly malformed: true;
  readonly reason: string;
}

export function isMalformed(item: unknown): item is MalformedRecord {
  return typeof item === 'object' && item !== null && (item as MalformedRecord).malformed === true;
}

/** Every record has an id: the federation key and what lookups and cursors use. */
export interface UpstreamRecord {
  readonly id: string;
}

/**
 * A filter on a list, as the GraphQL side passes it: plain values, already checked.
 * Its canonical form (`Resource.filterKey`) binds cursors and keys caches.
 */
export type ListFilter = Readonly<Record<string, string | number | boolean | null | undefined>>;

export interface Resource<R extends UpstreamRecord = UpstreamRecord, F extends ListFilter = ListFilter, N extends string = string> {
  /** The list's name: the upstream path segment and the root connection field (`locations`). */
  readonly name: N;
  /** The GraphQL type its records map to (`Location`); connection types are `${typename}Connection`. */
  readonly typename: string;
  /** The list path on the shard, ending with a slash (docs/upstream.md, "List endpoints"). */
  readonly path: string;
  /** The scope a call needs; null where the documentation names none (never refused for it). */
  readonly scope: string | null;
  /** Tolerant mapping of one item (docs/upstream.md, "Record shapes"). */
  map(item: unknown): R | MalformedRecord;
  /**
   * For a filterable list: whether a record matches. The upstream documents no query
   * parameters, so filters are applied while scanning its pages.
   */
  matches?(record: R, filter: F): boolean;
  /**
   * For a filterable list: what its filters are made of, so the live hub can find the
   * subscribers a change concerns by lookup instead of trying every filter
   * (src/live/viewIndex.ts). It must say exactly what `matches` does; a filter with a
   * field it does not name is tried one by one.
   */
  readonly filterShape?: FilterShape<R>;
  /**
   * The list's filter from the arguments a client gave (GraphQL's `filter` input, or a
   * child connection's own arguments plus its parent's id), checked and normalised so
   * that two spellings of one filter are equal (date-times become instants). Fields
   * left out are absent, not null.
   */
  filterFrom?(input: Readonly<Record<string, unknown>>): F;
  /**
   * The one place that would pass a filter upstream the day the upstream documents
   * one: query parameters to add to the list call. None today.
   */
  upstreamQuery?(filter: F): Readonly<Record<string, string>> | undefined;
}

/**
 * A filter as fields compared for equality with a value of the record, and at most one
 * range over a number of the record. `matches(record, filter)` must be: each equality
 * field the filter gives equals the record's value (a record's null equals nothing),
 * and, when the filter gives either bound of the range, the record's number is known,
 * at least `from` (inclusive) and below `before` (exclusive).
 */
export interface FilterShape<R extends UpstreamRecord = UpstreamRecord> {
  readonly equal: Readonly<Record<string, { of(record: R): string | null }>>;
  readonly range?: { readonly from: string; readonly before: string; of(record: R): number | null };
}

/** Any resource, whatever its record and filter types (for registries and maps). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyResource = Resource<any, any>;

/** The record type of a resource. */
export type RecordOfResource<T> = T extends Resource<infer R, ListFilter> ? R : never;

/** Defines a resource, checking its shape once. */
export function defineResource<R extends UpstreamRecord, F extends ListFilter = ListFilter, N extends string = string>(resource: Resource<R, F, N>): Resource<R, F, N> {
  if (!/^[a-z][a-z0-9_]*$/.test(resource.name)) throw new Error(`resource name "${resource.name}" must be a lower-case identifier`);
  if (!/^[A-Z][A-Za-z0-9]*$/.test(resource.typename)) throw new Error(`resource typename "${resource.typename}" must be a GraphQL type name`);
  if (!resource.path.startsWith('/') || !resource.path.endsWith('/')) throw new Error(`resource path "${resource.path}" must start and end with "/"`);
  return Object.freeze({ ...resource });
}

/** The prefix every documented list path carries (docs/upstream.md, "List endpoints"). */
export const API_PREFIX = '/api/public/v1/';
