import type { PageRef } from './pageReference';

/**
 * The canonical text of a filter or query (keys sorted, absent values dropped), so two
 * spellings of one filter share caches and cursors: `''` for none.
 */
export function filterKey(filter: Readonly<Record<string, unknown>> | null | undefined): string {
  if (!filter) return '';
  const entries = Object.entries(filter)
    .filter(([, value]) => value !== undefined && value !== null)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return entries.length === 0 ? '' : JSON.stringify(entries);
}

/**
 * The one key of an upstream page, for the per-request page cache and for sharing
 * identical in-flight calls: tenant, list, page reference, page size and the query sent
 * upstream (`filterKey` of `Resource.upstreamQuery`). Never shared across tenants.
 * A filter applied while scanning reads the same upstream pages as no filter, so only
 * what is actually sent upstream belongs here.
 */
export function pageKey(tenantId: string, list: string, ref: PageRef | null, pageSize: number, upstreamFilter = ''): string {
  return `${tenantId}\u0000${list}\u0000${pageSize}\u0000${upstreamFilter}\u0000${ref ?? ''}`;
}
