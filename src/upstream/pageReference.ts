import { UpstreamError } from './errors';

/**
 * A page reference, normalised: the query string to send on the list path (without
 * `?`), e.g. `cursor=abc&page_size=100`. `null` stands for the first page.
 *
 * The upstream does not document the format of `next`/`previous` (docs/upstream.md,
 * "Page references"). We accept an absolute URL, a path-relative URL, or a bare token (sent
 * back as the `cursor` query parameter). A URL is followed only on the tenant's own
 * `api_base` origin and on the same list path; only its query is kept, so the token
 * can never be sent anywhere else, even if the tenant later moves shards.
 */
export type PageRef = string;

/** Page references longer than this are refused: they end up inside our cursors. */
const MAX_REFERENCE_LENGTH = 2048;

/** `scheme://`: an absolute URL. A bare token may well contain a colon (`v1:abc`). */
const ABSOLUTE = /^[a-z][a-z0-9+.-]*:\/\//i;

/**
 * Normalises an envelope's `next`/`previous` value. A value with a scheme, or that
 * starts with `/`, `?` or `.`, or that has a query, is a URL; anything else is a
 * bare token (base64 tokens may well contain `/` or `=`).
 */
export function parsePageReference(raw: unknown, apiBase: string, listPath: string): PageRef | null {
  // An empty string stands for "none" as null does.
  if (raw === null || raw === undefined || raw === '') return null;
  const refuse = (why: string): never => {
    throw new UpstreamError('UPSTREAM_BAD_RESPONSE', `the upstream returned a page reference that was not followed: ${why}`);
  };
  if (typeof raw !== 'string' || raw.trim() === '') return refuse('not a non-empty string');
  if (raw.length > MAX_REFERENCE_LENGTH) return refuse('too long');
  const reference = raw.trim();
  // The usual reference: this list's URL on the tenant's shard, or its path, with a plain
  // query. The WHATWG URL reads it as exactly that query (tested against the long way).
  const query = plainQueryAfter(reference, apiBase, listPath);
  if (query !== null) return query;
  const bareToken = () => new URLSearchParams({ cursor: reference }).toString();
  const looksLikeUrl = ABSOLUTE.test(reference) || /^[/?.]/.test(reference) || reference.includes('?');
  if (!looksLikeUrl) return bareToken();
  const listUrl = new URL(listPath, apiBase);
  let url: URL;
  try {
    url = new URL(reference, listUrl);
    // `api/public/v1/locations/?page=2` (no leading slash) is relative to the origin, not to the list.
    if (url.pathname !== listPath && !/^[/?.]/.test(reference) && !ABSOLUTE.test(reference)) {
      const fromRoot = new URL(reference, `${apiBase}/`);
      if (fromRoot.pathname === listPath) url = fromRoot;
    }
  } catch {
    return refuse('not a valid URL');
  }
  // A standard-base64 token may start with `/`: with no query and no other way to be
  // this list's URL, it is a token. (Sent back as `?cursor=`, it goes to the list path only.)
  if (/^\/(?!\/)/.test(reference) && !reference.includes('?') && url.pathname !== listPath) return bareToken();
  if (url.origin !== apiBase) return refuse(`it points to another origin (${url.protocol}//${url.host})`);
  if (url.username || url.password) return refuse('it carries userinfo');
  if (url.pathname !== listPath) return refuse(`it points to another path (${url.pathname.slice(0, 80)})`);
  return url.search.replace(/^\?/, '');
}

/** The query of `reference` when it is `<apiBase><listPath>?<plain query>` or `<listPath>?<plain query>`, else null. */
function plainQueryAfter(reference: string, apiBase: string, listPath: string): string | null {
  let at = reference.startsWith(apiBase) ? apiBase.length : 0;
  if (!reference.startsWith(listPath, at) || reference.charCodeAt(at + listPath.length) !== 0x3f /* ? */) return null;
  at += listPath.length + 1;
  const query = reference.slice(at);
  return PLAIN_QUERY.test(query) ? query : null;
}

/**
 * A query of `name=value` pairs whose characters URLSearchParams writes back as they are
 * (letters, digits, `_ . * -`; no `%`, `+` or second `=`): what the usual page reference
 * looks like, and what a page URL can then be written from by concatenation.
 */
const PLAIN_QUERY = /^[\w.*-]+=[\w.*-]*(?:&[\w.*-]+=[\w.*-]*)*$/;
/** A plain query's `page_size` parameter, and its value. */
const PAGE_SIZE = /(?:^|&)page_size=([^&]*)/;

/**
 * The URL of a page: the list path on the tenant's `api_base` (an origin, checkApiBase),
 * with `page_size` always set; the reference's own `page_size` is kept. Written by
 * concatenation when the reference is a plain query, else through the WHATWG URL,
 * which gives the same text for a plain one; one of these is built for every call.
 */
export function pageUrl(apiBase: string, listPath: string, ref: PageRef | null, pageSize: number): string {
  if (!ref) return `${apiBase}${listPath}?page_size=${pageSize}`;
  if (PLAIN_QUERY.test(ref)) return PAGE_SIZE.test(ref) ? `${apiBase}${listPath}?${ref}` : `${apiBase}${listPath}?${ref}&page_size=${pageSize}`;
  const url = new URL(listPath, apiBase);
  url.search = ref;
  if (!url.searchParams.has('page_size')) url.searchParams.set('page_size', String(pageSize));
  return url.href;
}

/** The `page_size` a page URL of `pageUrl` sends. */
export function sentPageSize(url: string): number {
  const query = url.slice(url.indexOf('?') + 1);
  if (PLAIN_QUERY.test(query)) return Number(PAGE_SIZE.exec(query)?.[1]);
  return Number(new URL(url).searchParams.get('page_size'));
}
