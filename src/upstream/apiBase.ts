import { isIP } from 'node:net';
import { UpstreamError } from './errors';

/**
 * The `api_base` claim decides where our bearer token goes, so it is checked before
 * any use (CONTRACT.md section 4, "api_base claim"): an https origin, or plain http on
 * a loopback host only; no userinfo, no path beyond `/`, no query or fragment; and,
 * when an allow-list is configured, a host on it.
 *
 * @returns the normalised origin, e.g. `https://shard-3.example.com`.
 */
export function checkApiBase(value: unknown, allowList: readonly string[] = []): string {
  const refuse = (why: string): never => {
    throw new UpstreamError('UPSTREAM_MISCONFIGURED', `the token's api_base was refused: ${why}`, { cause: 'address_refused' });
  };
  if (typeof value !== 'string' || value.length === 0) return refuse('missing or not a string');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return refuse('not an absolute URL');
  }
  if (url.username || url.password) refuse('it carries userinfo');
  if (url.search || url.hash || value.includes('#') || value.includes('?')) refuse('it carries a query or fragment');
  if (url.pathname !== '/' || /[\\]|%2f|%5c/i.test(value.slice(url.origin.length))) {
    refuse('it carries a path; only an origin is accepted');
  }
  if (url.protocol === 'http:') {
    if (!isLoopbackHost(url.hostname)) refuse('plain http is accepted only for a loopback host');
  } else if (url.protocol !== 'https:') {
    refuse(`scheme ${url.protocol} is not https`);
  }
  if (allowList.length > 0 && !allowList.some((allowed) => hostMatches(url.host, url.hostname, allowed))) {
    refuse(`host ${url.host} is not in WFS_API_BASE_ALLOW`);
  }
  return url.origin;
}

function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}

/** An allow-list entry is a host (`api.example.com`, with or without port) or a suffix `*.example.com`. */
function hostMatches(hostWithPort: string, hostname: string, allowed: string): boolean {
  const entry = allowed.trim().toLowerCase();
  if (entry.startsWith('*.')) return hostname.endsWith(entry.slice(1));
  return entry === hostWithPort || entry === hostname;
}
