/**
 * The one place live polling reads the upstream: a whole list of one tenant, page by
 * page, through the same client as queries (token cache, shard breaker, Retry-After
 * windows, call budget, address policy, in-flight sharing with queries). Kept to this
 * small adapter so that it can be re-pointed when the reading side moves
 * (src/upstream/reading) without touching the pollers.
 */
import type { ListPage, WfsClient } from '../upstream/client';
import type { PageRef } from '../upstream/pageReference';
import { isMalformed, type AnyResource, type UpstreamRecord } from '../upstream/resources';

/** A list as one poll read it. */
export interface ListRead {
  readonly records: readonly UpstreamRecord[];
  /** Upstream page calls the walk made (or shared with a query in flight). */
  readonly calls: number;
}

/** Reads a tenant's whole list; rejects with the client's UpstreamError when a page fails. */
export type ListReader = (tenantId: string, resource: AnyResource, signal: AbortSignal) => Promise<ListRead>;

/** Page size of a poll: the largest the upstream documents, so a walk takes as few calls as it can. */
export const POLL_PAGE_SIZE = 100;

/**
 * A reader over `client`: one call budget per walk (WFS_UPSTREAM_CALL_BUDGET, like a
 * query's), a malformed item skipped (a query reports it; a poll has nobody to tell,
 * and the record simply is not part of the list it sees).
 */
export function clientListReader(client: WfsClient, deadlineMs: number): ListReader {
  return async (tenantId, resource, signal) => {
    const budget = client.budgetFor(signal, deadlineMs);
    const records: UpstreamRecord[] = [];
    let calls = 0;
    let ref: PageRef | null = null;
    for (;;) {
      const page: ListPage<UpstreamRecord> = await client.listPage<UpstreamRecord>(tenantId, resource, { ref, pageSize: POLL_PAGE_SIZE, signal, budget });
      calls += 1;
      for (const item of page.items) if (!isMalformed(item)) records.push(item);
      if (!page.hasMore || !page.next) return { records, calls };
      ref = page.next;
    }
  };
}
