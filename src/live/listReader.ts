/**
 * The one place live polling reads the upstream: a whole list of one tenant, page by
 * page, through the reading side's `TenantReader` like a query's reads (one reader per poll):
 * the company's grant checked first (a withdrawn scope ends the poller with
 * FORBIDDEN), every page under one call budget and deadline (WFS_UPSTREAM_CALL_BUDGET
 * pages and 15 s, a query's), the walk guarded against a page chain that loops or never
 * ends, and the same client underneath (token cache, shard breaker, Retry-After
 * windows, address policy, in-flight sharing with queries). The pages read also
 * refresh the tenant's entity index, as a query's walk does.
 */
import { createTenantReader, fetchedAt, type ReadingServices } from '../upstream/reading/tenantReader';
import { isMalformed, type AnyResource, type UpstreamRecord } from '../upstream/resources';
import type { PageRef } from '../upstream/pageReference';

/** A list as one poll read it. */
export interface ListRead {
  readonly records: readonly UpstreamRecord[];
  /** Upstream page calls the walk made (or shared with a query in flight). */
  readonly calls: number;
  /**
   * When the walk's first page was asked of the upstream, on the entity indexes' clock:
   * the earliest ask of any of its pages (one shared with a query in flight is as old
   * as that query's call), so what the walk saw is at most this old.
   */
  readonly askedAt: number;
}

/** Reads a tenant's whole list; rejects with the client's UpstreamError when a page fails. */
export type ListReader = (tenantId: string, resource: AnyResource, signal: AbortSignal) => Promise<ListRead>;

/** Page size of a poll: the largest the upstream documents, so a walk takes as few calls as it can. */
export const POLL_PAGE_SIZE = 100;

/**
 * A reader over the tenants' readers: a malformed item is skipped (a query reports it;
 * a poll has nobody to tell, and the record simply is not part of the list it sees).
 */
export function tenantListReader(services: ReadingServices): ListReader {
  return async (tenantId, resource, signal) => {
    const reader = createTenantReader(services, tenantId, signal, { live: true });
    try {
      await reader.authorize(resource);
      const walk = reader.walk<UpstreamRecord>(resource);
      const records: UpstreamRecord[] = [];
      let calls = 0;
      let askedAt = services.indexes.now();
      let ref: PageRef | null = null;
      for (;;) {
        const page = await walk(ref, POLL_PAGE_SIZE);
        calls += 1;
        askedAt = Math.min(askedAt, fetchedAt(page) ?? askedAt);
        for (const item of page.items) if (!isMalformed(item)) records.push(item);
        if (!page.hasMore || !page.next) return { records, calls, askedAt };
        ref = page.next;
      }
    } finally {
      reader.release();
    }
  };
}
