import { isIP } from 'node:net';
import { checkAddress, hostMatches, isLoopbackName, rangeAllows } from './addressPolicy';
import { UpstreamError } from '../errors';

/**
 * The `api_base` claim decides where our bearer token goes, so it is checked before
 * any use (docs/upstream.md, "api_base claim"): an https origin, or plain http on
 * a loopback host only; no userinfo, no path beyond `/`, no query or fragment; an IP
 * literal (however written: WHATWG URL parsing normalises decimal, octal and hex IPv4
 * forms) must be public unicast or loopback (addressPolicy.ts); and, when an allow-list
 * is configured, a host or address range on it. Names are checked again on every
 * connection, against the addresses they resolve to (the guarded connector, http.ts).
 * With `loopback` false (production) a loopback host too must be on the allow-list.
 *
 * @returns the normalised origin, e.g. `https://shard-3.example.com`.
 */
export function checkApiBase(value: unknown, allowList: readonly string[] = [], loopback = true): string {
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
  checkAddress(url.hostname, url.hostname, allowList, loopback);
  if (allowList.length > 0 && !allowList.some((allowed) => hostMatches(url.host, url.hostname, allowed)) && !rangeAllows(allowList, url.hostname)) {
    // Messages reach API clients: the allow-list is named in the operator's log, not here.
    refuse(`host ${url.host} is not on the allow-list`);
  }
  return url.origin;
}

function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (isLoopbackName(host)) return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}
