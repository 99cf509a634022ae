/**
 * The guard on one walk along an upstream list's page chain (`guardPageChain`): the
 * upstream hands out the next page's reference, so a broken or hostile upstream can
 * point back at a page it already gave, or never end. Every walk the reading side
 * makes (a connection's pages, an index scan) goes through one.
 */
import { UpstreamError } from '../errors';
import type { PageRef } from '../pageReference';

/** The most upstream pages one walk may read: a runaway or hostile chain stops here. */
export const MAX_PAGES_PER_WALK = 1000;

/**
 * Wraps a page fetcher so a chain that comes back to a page it already gave, or
 * that never ends, is an UPSTREAM_BAD_RESPONSE instead of an endless walk.
 */
export function guardPageChain<P>(fetchPage: (ref: PageRef | null, pageSize: number) => Promise<P>): (ref: PageRef | null, pageSize: number) => Promise<P> {
  const seen = new Set<string>();
  return (ref, pageSize) => {
    const key = ref ?? '';
    if (seen.has(key)) return Promise.reject(new UpstreamError('UPSTREAM_BAD_RESPONSE', 'the upstream page chain loops back to a page it already returned', { cause: 'broken_page_chain' }));
    if (seen.size >= MAX_PAGES_PER_WALK) {
      return Promise.reject(new UpstreamError('UPSTREAM_BAD_RESPONSE', `the upstream list is longer than ${MAX_PAGES_PER_WALK} pages; page with first/after instead`, { cause: 'broken_page_chain' }));
    }
    seen.add(key);
    return fetchPage(ref, pageSize);
  };
}
