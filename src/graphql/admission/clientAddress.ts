import ipaddr from 'ipaddr.js';

/**
 * The key a client address's share is counted by: an IPv4 address as it is (an
 * IPv4-mapped IPv6 one too), an IPv6 address by its /64 prefix (ipaddr.js parses it).
 * One host or customer is given a whole /64: counted by the whole address, one /64
 * would have 2^64 shares (eight addresses of one /64 opened 8 000 WebSocket
 * connections in 3 s when the WebSocket side counted whole addresses).
 */
export function clientAddress(remote: string | undefined): string {
  if (!remote) return '';
  if (!remote.includes(':')) return remote;
  if (!ipaddr.isValid(remote)) return remote;
  const parsed = ipaddr.process(remote);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  return `${(parsed as ipaddr.IPv6).parts.slice(0, 4).map((part) => part.toString(16)).join(':')}::/64`;
}
