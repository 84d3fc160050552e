import ipaddr from 'ipaddr.js';

/**
 * The key a client address is counted under: an IPv4 address as it is, an IPv6 address by its
 * /64 (one machine or one home is commonly given a whole /64, so counting single IPv6 addresses
 * would give a guesser 2^64 fresh starts), an IPv4 address written as IPv6 (`::ffff:1.2.3.4`) as
 * the IPv4 address it is. Anything unreadable is counted under its own text, and a connection
 * already gone (no address at all) under one key for all such.
 */
export function addressKeyOf(address: string | undefined): string {
  if (address === undefined) return '(no address)';
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const v6 = parsed as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().toString();
  const prefix = v6.parts.slice(0, 4).map((part) => part.toString(16));
  return `${prefix.join(':')}::/64`;
}
