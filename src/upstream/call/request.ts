import { pageUrl, sentPageSize, type PageRef } from '../pageReference';
import type { Resource, UpstreamRecord } from '../resources';
import type { TokenGrant } from '../token/tokenEndpoint';

/** One page as the request loop asks for it: which list, where in it, how large, with which query. */
export interface PageRequest<R extends UpstreamRecord> {
  readonly resource: Resource<R>;
  readonly ref: PageRef | null;
  readonly pageSize: number;
  readonly query: Readonly<Record<string, string>> | undefined;
}

/** The HTTP request of one page with one token: where it goes, its headers, and the page size it asks for. */
export interface ListRequest {
  readonly url: string;
  readonly headers: { readonly authorization: string; readonly accept: 'application/json' };
  /** The `page_size` the URL carries (a reference the upstream gave us may carry its own), else the page's. */
  readonly pageSize: number;
}

/**
 * The request of `page` with `grant`'s token. Built from each attempt's token: after a
 * renewal the tenant may live on another shard.
 */
export function listRequest(grant: TokenGrant, page: PageRequest<UpstreamRecord>): ListRequest {
  const url = listUrl(grant, page);
  const fromReference = sentPageSize(url);
  const pageSize = Number.isInteger(fromReference) && fromReference > 0 ? fromReference : page.pageSize;
  return { url, headers: { authorization: bearer(grant), accept: 'application/json' }, pageSize };
}

/**
 * The URL of one page: the tenant's shard (the token's api_base, validated to an
 * origin), the list's path, the reference, `page_size` and the resource's query. It is
 * also the coalescing key: identical URLs share one call.
 */
export function listUrl(grant: TokenGrant, { resource, ref, pageSize, query }: PageRequest<UpstreamRecord>): string {
  const href = pageUrl(grant.apiBase, resource.path, ref, pageSize);
  if (ref !== null || !query) return href;
  const url = new URL(href);
  for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
  return url.href;
}

/**
 * The Authorization header of a grant, made once per token: a token of several hundred
 * characters would otherwise be copied into a new string for every call, kept through
 * the upstream wait.
 */
const bearers = new WeakMap<TokenGrant, string>();
function bearer(grant: TokenGrant): string {
  let header = bearers.get(grant);
  if (header === undefined) {
    header = `Bearer ${grant.accessToken}`;
    bearers.set(grant, header);
  }
  return header;
}
