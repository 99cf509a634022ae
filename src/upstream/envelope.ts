import { UpstreamError } from './errors';
import { parsePageReference, type PageRef } from './pageReference';
import type { MalformedRecord, Resource, UpstreamRecord } from './resources';

/**
 * The list envelope (docs/upstream.md, "List envelope"): every list
 * answers `{ "object": "list", "data": [...], "has_more": bool, "next", "previous" }`.
 * One module holds that assumption: a body of any other shape is
 * UPSTREAM_BAD_RESPONSE, each item is mapped by its resource (an item of the wrong
 * shape stays in place as a MalformedRecord), and the page references are checked
 * by `pageReference.ts`.
 */

/** One page of a list, validated and mapped. */
export interface ListPage<T> {
  /** The reference this page was fetched with (`null`: the first page). */
  readonly ref: PageRef | null;
  /** The `page_size` it was fetched with; the same reference and size give the same page again. */
  readonly pageSize: number;
  /** Records in upstream order; an item of the wrong shape stays in place as a MalformedRecord. */
  readonly items: ReadonlyArray<T | MalformedRecord>;
  readonly hasMore: boolean;
  readonly next: PageRef | null;
  readonly previous: PageRef | null;
}

/** The page a 200 answer's body describes; UPSTREAM_BAD_RESPONSE when it is not the envelope. */
export function parseEnvelope<R extends UpstreamRecord>(body: unknown, resource: Resource<R>, ref: PageRef | null, pageSize: number, apiBase: string): ListPage<R> {
  const list = resource.name;
  const bad = (why: string): never => {
    throw new UpstreamError('UPSTREAM_BAD_RESPONSE', `the ${list} response is not a list envelope: ${why}`);
  };
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return bad('not a JSON object');
  const envelope = body as Record<string, unknown>;
  if (envelope.object !== 'list') bad('"object" is not "list"');
  if (!Array.isArray(envelope.data)) bad('"data" is not an array');
  if (typeof envelope.has_more !== 'boolean') bad('"has_more" is not a boolean');
  const path = resource.path;
  const next = parsePageReference(envelope.next, apiBase, path);
  if (envelope.has_more && next === null) bad('"has_more" is true but "next" is missing');
  return {
    ref,
    pageSize,
    items: (envelope.data as unknown[]).map((item) => resource.map(item)),
    hasMore: envelope.has_more as boolean,
    next: envelope.has_more ? next : null,
    previous: parsePageReference(envelope.previous, apiBase, path),
  };
}
