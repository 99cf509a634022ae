import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { ConfigError } from './errors';

/**
 * How a setting's text becomes its value: `text` is the variable's value, trimmed and
 * not empty (an unset or blank variable takes the setting's fallback instead, and never
 * reaches a reader), `name` the variable's, for the error. Every message names the
 * variable, the value seen (never a secret's) and what is expected.
 */
export type Reader<T> = (text: string, name: string) => T;

/** The trimmed text of a variable, or undefined when it is unset or blank. */
export function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed ? trimmed : undefined;
}

export const text: Reader<string> = (value) => value;

/** A header name, as node:http hands headers over: lower case. */
export const headerName: Reader<string> = (value) => value.toLowerCase();

/** An integer from `min` to `max`. */
export function integer(min: number, max: number): Reader<number> {
  return (value, name) => {
    if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) throw new ConfigError(name, `must be an integer from ${min} to ${max}, got "${value}"`);
    return Number(value);
  };
}

export const port: Reader<number> = (value, name) => {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 65535) throw new ConfigError(name, `must be a port number from 0 to 65535, got "${value}"`);
  return n;
};

export const flag: Reader<boolean> = (value, name) => {
  const lower = value.toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(lower)) return true;
  if (['0', 'false', 'no', 'off'].includes(lower)) return false;
  throw new ConfigError(name, `must be true or false, got "${lower}"`);
};

/** One of `values`. */
export function oneOf(values: readonly string[]): Reader<string> {
  return (value, name) => {
    if (!values.includes(value)) throw new ConfigError(name, `must be one of ${values.join(', ')}`);
    return value;
  };
}

/** The placeholder the deploy examples ship (exactly 32 characters, so the length check alone passes it). */
const PLACEHOLDER_SECRETS = ['replace-with-openssl-rand-hex-32'];
/** Fewer distinct characters than this is a made-up secret, not a random one (`openssl rand -hex 32` gives about 16). */
const MIN_DISTINCT_SECRET_CHARACTERS = 8;

/** A secret: at least `minLength` characters, and not a placeholder or a made-up string. Never echoed. */
export function secret(minLength: number): Reader<string> {
  return (value, name) => {
    const problem =
      value.length < minLength ? `must be at least ${minLength} characters`
      : PLACEHOLDER_SECRETS.includes(value.toLowerCase()) || /replace[-_ ]?(me|with)|change[-_ ]?me/i.test(value) ? 'is still the example placeholder'
      : new Set(value).size < MIN_DISTINCT_SECRET_CHARACTERS ? 'has too little variety to be a random secret'
      : undefined;
    if (problem) throw new ConfigError(name, `${problem}; set a random value (for example \`openssl rand -hex 32\`)`);
    return value;
  };
}

/**
 * An http(s) URL the subgraph sends secrets to or trusts identities from, without the
 * trailing slashes: client secrets go to WFS_AUTH_URL and tenant identities come from
 * WFS_JWKS_URL, so neither may cross a network in clear text.
 */
export const secureUrl: Reader<string> = (value, name) => {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(name, `must be an absolute http(s) URL, got "${value}"`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ConfigError(name, 'must be an http(s) URL');
  if (url.protocol === 'http:' && !isLoopbackHostname(url.hostname)) throw new ConfigError(name, 'must be https (plain http only on a loopback host)');
  if (url.username || url.password) throw new ConfigError(name, 'must not carry credentials in the URL');
  return value.replace(/\/+$/, '');
};

function isLoopbackHostname(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host === '::1') return true;
  return isIP(host) === 4 && host.startsWith('127.');
}

/** Comma-separated http(s) URLs that carry no credentials (the key goes in its own setting). */
export const urlList: Reader<string[]> = (value, name) => {
  const urls = value.split(',').map((s) => s.trim()).filter(Boolean);
  for (const entry of urls) {
    let url: URL;
    try {
      url = new URL(entry);
    } catch {
      throw new ConfigError(name, `"${entry.slice(0, 80)}" is not an absolute http(s) URL`);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ConfigError(name, `"${entry.slice(0, 80)}" must be an http(s) URL`);
    if (url.username || url.password) throw new ConfigError(name, 'must not carry credentials in a URL (the key goes in WFS_CACHE_INVALIDATION_KEY)');
  }
  return urls;
};

/** Comma-separated http(s) origins (`scheme://host:port`, no path), each kept as URL gives its origin. */
export const originList: Reader<string[]> = (value, name) =>
  value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((entry) => {
      let url: URL | undefined;
      try {
        url = new URL(entry);
      } catch {
        url = undefined;
      }
      if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.username || url.password || url.pathname !== '/' || url.search || url.hash || entry.endsWith('/')) {
        throw new ConfigError(name, `"${entry.slice(0, 80)}" is not an http(s) origin (scheme://host:port, no path)`);
      }
      return url.origin;
    });

/** Comma-separated hosts, `*.suffix`es, `host:port`s or CIDR ranges, in lower case. */
export const hostList: Reader<string[]> = (value, name) => {
  const entries = value.split(',').map((s) => s.trim().toLowerCase()).filter(Boolean);
  for (const entry of entries) {
    const valid = entry.includes('/') ? ipaddr.isValidCIDR(entry) : /^(\*\.)?[a-z0-9.[\]:-]+$/.test(entry);
    if (!valid) throw new ConfigError(name, `"${entry.slice(0, 80)}" is not a host, *.suffix, host:port or CIDR range`);
  }
  return entries;
};

export const redisUrl: Reader<string> = (value, name) => {
  if (!/^rediss?:\/\//.test(value)) throw new ConfigError(name, 'must start with redis:// or rediss://');
  return value;
};

/**
 * A Redis key prefix: letters, digits and `_.:-`, at most 64. No glob characters
 * (`*?[]`), so an ACL key pattern (`~<prefix>*`) or a SCAN MATCH names exactly one
 * deployment's keys.
 */
export const keyPrefix: Reader<string> = (value, name) => {
  if (!/^[A-Za-z0-9_.:-]{1,64}$/.test(value)) throw new ConfigError(name, `must be 1 to 64 letters, digits or _.:- (for example "wfs-blue:"), got "${value.slice(0, 80)}"`);
  return value;
};
