import { UpstreamError } from './errors';

/**
 * A page reference, normalised: the query string to send on the list path (without
 * `?`), e.g. `cursor=abc&page_size=100`. `null` stands for the first page.
 *
 * The upstream does not document the format of `next`/`previous` (CONTRACT.md
 * section 4). We accept an absolute URL, a path-relative URL, or a bare token (sent
 * back as the `cursor` query parameter). A URL is followed only on the tenant's own
 * `api_base` origin and on the same list path; only its query is kept, so the token
 * can never be sent anywhere else, even if the tenant later moves shards.
 */
export type PageRef = string;

/** Page references longer than this are refused: they end up inside our cursors. */
const MAX_REFERENCE_LENGTH = 2048;

const ABSOLUTE = /^[a-z][a-z0-9+.-]*:/i;

/** Normalises an envelope's `next`/`previous` value. */
export function parsePageReference(raw: unknown, apiBase: string, listPath: string): PageRef | null {
  if (raw === null || raw === undefined) return null;
  const refuse = (why: string): never => {
    throw new UpstreamError('UPSTREAM_BAD_RESPONSE', `the upstream returned a page reference that was not followed: ${why}`);
  };
  if (typeof raw !== 'string' || raw.trim() === '') return refuse('not a non-empty string');
  if (raw.length > MAX_REFERENCE_LENGTH) return refuse('too long');
  const reference = raw.trim();
  if (!ABSOLUTE.test(reference) && !/[/?]/.test(reference) && !reference.startsWith('.')) {
    return new URLSearchParams({ cursor: reference }).toString();
  }
  let url: URL;
  try {
    url = new URL(reference, new URL(listPath, apiBase));
  } catch {
    return refuse('not a valid URL');
  }
  if (url.origin !== apiBase) return refuse(`it points to another origin (${url.protocol}//${url.host})`);
  if (url.username || url.password) return refuse('it carries userinfo');
  if (url.pathname !== listPath) return refuse(`it points to another path (${url.pathname.slice(0, 80)})`);
  return url.search.replace(/^\?/, '');
}

/** The URL of a page: the list path on the tenant's `api_base`, with `page_size` always set. */
export function pageUrl(apiBase: string, listPath: string, ref: PageRef | null, pageSize: number): URL {
  const url = new URL(listPath, apiBase);
  if (ref) url.search = ref;
  if (!url.searchParams.has('page_size')) url.searchParams.set('page_size', String(pageSize));
  return url;
}
