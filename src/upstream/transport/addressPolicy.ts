import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { UpstreamError } from '../errors';

/*
 * Where a bearer token may be sent (docs/upstream.md, "api_base claim"). The
 * `api_base` claim is data from the network, so the address it leads to is checked:
 * a public unicast address, or loopback (demo and tests). Private ranges, shared
 * address space, link-local, unique-local, unspecified, broadcast, multicast,
 * documentation, benchmark and other reserved ranges are refused, also in their
 * IPv4-mapped, IPv4-compatible and NAT64 forms, unless the operator names the host
 * or a CIDR range in WFS_API_BASE_ALLOW. Cloud metadata addresses are refused even then.
 *
 * ipaddr.js does the range work (its special-range tables); nothing here parses an
 * address by hand. `checkApiBase` applies this to IP literals in the URL, and the
 * guarded connector (http.ts) to every address a name resolves to, at connect time.
 */

export type AddressKind = 'loopback' | 'public' | 'non-public' | 'metadata';

/** Addresses of cloud instance-metadata services (and all of link-local): never a shard. */
const METADATA_RANGES = ['169.254.0.0/16', 'fe80::/10', 'fd00:ec2::254/128', '100.100.100.200/32', '192.0.0.192/32'].map((cidr) => ipaddr.parseCIDR(cidr));
const NAT64 = ipaddr.parseCIDR('64:ff9b::/96');
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');

type Address = ipaddr.IPv4 | ipaddr.IPv6;

function inRange(address: Address, [network, bits]: [Address, number]): boolean {
  return address.kind() === network.kind() && address.match(network, bits);
}

/** The IPv4 address an IPv6 address carries (mapped, translated, NAT64 or compatible), if any. */
function embeddedIPv4(address: ipaddr.IPv6): { v4: ipaddr.IPv4; form: 'mapped' | 'nat64' | 'compatible' } | undefined {
  if (address.isIPv4MappedAddress()) return { v4: address.toIPv4Address(), form: 'mapped' };
  const range = address.range();
  if (range === 'unspecified' || range === 'loopback') return undefined;
  const last4 = () => ipaddr.fromByteArray(address.toByteArray().slice(12)) as ipaddr.IPv4;
  if (range === 'rfc6145') return { v4: last4(), form: 'mapped' };
  if (inRange(address, NAT64)) return { v4: last4(), form: 'nat64' };
  if (inRange(address, IPV4_COMPATIBLE)) return { v4: last4(), form: 'compatible' };
  return undefined;
}

/** What kind of address this is; undefined when `text` is not an IP address. */
export function classifyAddress(text: string): AddressKind | undefined {
  const bare = text.replace(/^\[|\]$/g, '');
  if (isIP(bare) === 0) return undefined;
  const address = ipaddr.parse(bare);
  const embedded = address.kind() === 'ipv6' ? embeddedIPv4(address as ipaddr.IPv6) : undefined;
  const effective: Address = embedded?.v4 ?? address;
  if (METADATA_RANGES.some((range) => inRange(address, range) || inRange(effective, range))) return 'metadata';
  const range = effective.range();
  if (range === 'loopback') return embedded?.form === 'nat64' ? 'non-public' : 'loopback';
  // The deprecated IPv4-compatible form is never a legitimate way to reach a shard.
  if (embedded?.form === 'compatible') return 'non-public';
  return range === 'unicast' ? 'public' : 'non-public';
}

/** An allow-list entry that is an address or a CIDR range (`10.0.0.0/8`, `fd12::/16`, `10.1.2.3`). */
function parseRange(entry: string): [Address, number] | undefined {
  const bare = entry.replace(/^\[|\]$/g, '');
  try {
    if (bare.includes('/')) return ipaddr.parseCIDR(bare);
    if (isIP(bare) !== 0) {
      const address = ipaddr.parse(bare);
      return [address, address.kind() === 'ipv4' ? 32 : 128];
    }
  } catch {
    return undefined;
  }
  return undefined;
}

/** An allow-list entry that names a host (`api.example.com`, with or without port) or a suffix `*.example.com`. */
export function hostMatches(hostWithPort: string, hostname: string, allowed: string): boolean {
  const entry = allowed.trim().toLowerCase();
  if (entry.startsWith('*.')) return hostname.endsWith(entry.slice(1));
  return entry === hostWithPort || entry === hostname;
}

/** True when an allow-list entry covers this address (a CIDR range or an address entry). */
export function rangeAllows(allowList: readonly string[], address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '');
  if (isIP(bare) === 0) return false;
  const parsed = ipaddr.process(bare);
  return allowList.some((entry) => {
    const range = parseRange(entry);
    return range !== undefined && inRange(parsed, range);
  });
}

/** `localhost` and `*.localhost` (RFC 6761): loopback by name. */
export function isLoopbackName(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, '');
  return host === 'localhost' || host.endsWith('.localhost');
}

/**
 * Throws UPSTREAM_MISCONFIGURED unless a bearer token may go to `address`, reached
 * through `hostname` (the api_base host, for allow-list entries that name hosts).
 * `loopback` false (production): a loopback address is refused like a private one
 * unless the allow-list names it, so a bad api_base cannot hand a token to a local sidecar.
 */
export function checkAddress(hostname: string, address: string, allowList: readonly string[], loopback = true): void {
  const kind = classifyAddress(address) ?? (isLoopbackName(address) ? 'loopback' : undefined);
  if (kind === undefined || kind === 'public' || (kind === 'loopback' && loopback)) return;
  const refuse = (why: string): never => {
    throw new UpstreamError('UPSTREAM_MISCONFIGURED', `the token's api_base was refused: ${why}`);
  };
  if (kind === 'metadata') refuse(`${hostname} leads to a link-local or cloud metadata address`);
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const named = allowList.some((entry) => parseRange(entry) === undefined && hostMatches(host, host, entry.replace(/:\d+$/, '')));
  if (!named && !rangeAllows(allowList, address)) refuse(`${hostname} leads to a ${kind === 'loopback' ? 'loopback' : 'non-public'} address`);
}
