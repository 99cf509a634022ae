import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import { Agent, buildConnector, type Dispatcher } from 'undici';
import { checkAddress } from './addressPolicy';

/** Timeouts in milliseconds for every upstream call. */
export interface HttpTimeouts {
  readonly connectMs: number;
  readonly headersMs: number;
  readonly bodyMs: number;
}

export const DEFAULT_TIMEOUTS: HttpTimeouts = { connectMs: 3_000, headersMs: 8_000, bodyMs: 8_000 };

/** `dns.lookup`'s shape, so tests can resolve names without a DNS server. */
export type Resolve = (hostname: string) => Promise<LookupAddress[]>;

/** Where data calls may connect: the `api_base` address rules (addressPolicy.ts). */
export interface AddressGuard {
  /** WFS_API_BASE_ALLOW entries. */
  readonly allowList: readonly string[];
  /** Whether loopback addresses pass without the allow-list naming them (default true; false in production). */
  readonly loopback?: boolean;
  /** Resolves names; default `dns.lookup` with `all: true`. */
  readonly resolve?: Resolve;
  /** Observes each connection the connector is asked for (host name as given), before any check. */
  readonly onConnect?: (hostname: string) => void;
}

const systemResolve: Resolve = (hostname) =>
  new Promise((resolve, reject) => dnsLookup(hostname, { all: true }, (error, addresses) => (error ? reject(error) : resolve(addresses))));

/**
 * A connector that checks the address actually connected to: an IP literal before
 * connecting, a name through the DNS lookup the socket itself uses, so a name that
 * resolves to a public address first and to a private one later (DNS rebinding)
 * cannot pass. A refusal is an UpstreamError (UPSTREAM_MISCONFIGURED), and no
 * connection is attempted.
 */
export function guardedConnector(guard: AddressGuard, timeoutMs: number): buildConnector.connector {
  const resolve = guard.resolve ?? systemResolve;
  const lookup = (hostname: string, options: LookupOptions, callback: (error: Error | null, address: string | LookupAddress[], family?: number) => void) => {
    resolve(hostname).then(
      (addresses) => {
        for (const { address } of addresses) checkAddress(hostname, address, guard.allowList, guard.loopback);
        const wanted = options.family ? addresses.filter((a) => a.family === options.family) : addresses;
        if (wanted.length === 0) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), []);
        if (options.all) callback(null, wanted);
        else callback(null, wanted[0]!.address, wanted[0]!.family);
      },
      (error: Error) => callback(error, []),
    ).catch((error: Error) => callback(error, []));
  };
  const connect = buildConnector({ timeout: timeoutMs, lookup } as buildConnector.BuildOptions);
  return (options, callback) => {
    guard.onConnect?.(options.hostname);
    const host = options.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host) !== 0) {
      try {
        checkAddress(host, host, guard.allowList, guard.loopback);
      } catch (error) {
        return callback(error as Error, null);
      }
    }
    connect(options, callback);
  };
}

/**
 * An undici Agent: it keeps a keep-alive pool per origin, so each shard host and the
 * identity provider get their own warm connections. With a `guard`, every connection
 * goes through `guardedConnector` (data calls to `api_base`); without one it is the
 * plain agent the operator-configured token endpoint uses.
 */
export function createUpstreamAgent(timeouts: HttpTimeouts = DEFAULT_TIMEOUTS, guard?: AddressGuard): Dispatcher {
  return new Agent({
    connections: 64,
    pipelining: 1,
    keepAliveTimeout: 30_000,
    keepAliveMaxTimeout: 120_000,
    connect: guard ? guardedConnector(guard, timeouts.connectMs) : { timeout: timeouts.connectMs },
    headersTimeout: timeouts.headersMs,
    bodyTimeout: timeouts.bodyMs,
    maxResponseSize: MAX_BODY_BYTES,
    // undici 8 would speak HTTP/2 to a TLS upstream that offers it (ALPN); the pool
    // sizes, timeouts and connection bounds here are HTTP/1.1's, and only that is tested.
    allowH2: false,
  });
}

/** A hostile or broken upstream must not fill our memory: bodies above this fail. */
export const MAX_BODY_BYTES = 8 * 1024 * 1024;

/** Reads a JSON body; `undefined` when it is not JSON. Always consumes the body. */
export async function readJson(body: Dispatcher.ResponseData['body']): Promise<unknown> {
  const text = await body.text();
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Parses `Retry-After` (delta-seconds or an HTTP date) into seconds, or undefined. */
export function retryAfterSeconds(header: string | string[] | undefined, now = Date.now()): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value);
  const date = Date.parse(value);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, Math.ceil((date - now) / 1000));
}

/** A network error as a short phrase; never includes request headers or bodies. */
export function describeNetworkError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    if (error.name === 'AbortError' || error.name === 'TimeoutError') return 'timed out or cancelled';
    return typeof code === 'string' ? code : error.name;
  }
  return 'unknown error';
}
