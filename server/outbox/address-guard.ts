import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

// Outgoing requests to URLs from the config (an agent's callback, a webhook, a Slack URL) must not
// become a way into the network Interlock runs in: the host is resolved, every address it has is
// checked, and the request then connects to a checked address only, so a second DNS answer (DNS
// rebinding) cannot swap in another one.

/** Kinds of address a request is refused for unless the config allows the host or address. */
export const REFUSED_ADDRESS_KINDS = [
  'unspecified',
  'loopback',
  'private',
  'shared',
  'link-local',
  'multicast',
  'broadcast',
  'reserved',
  'anycast',
  'teredo',
  'outside-global-unicast',
  'not-an-address',
] as const;
/** One refused kind. */
export type RefusedAddressKind = (typeof REFUSED_ADDRESS_KINDS)[number];

/** How an IPv6 address carries the IPv4 address it is judged by. */
export type EmbeddingForm = 'IPv4-mapped' | 'NAT64' | '6to4';

/** One address a host resolved to, as node:dns gives it. */
export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Resolves a host name to all its addresses (node:dns `lookup` with `all: true` by default). */
export type Resolve = (hostname: string) => Promise<ResolvedAddress[]>;

/** The system resolver, as node:http would use it, but every address at once. */
export const resolveWithSystem: Resolve = (hostname) => lookup(hostname, { all: true, verbatim: true });

/** Where a request may go: the checked addresses, to connect to and nothing else; or why not. */
export type DestinationCheck = { ok: true; host: string; addresses: ResolvedAddress[] } | { ok: false; error: string; retryable: boolean };

/** A refused address: its kind, and the IPv4 address inside it (and how it is carried) when an IPv6 form was judged by one. */
export interface AddressClass {
  kind: RefusedAddressKind;
  embeddedIpv4: string | null;
  carriedAs: EmbeddingForm | null;
}

/** How a refusal reads after "X is" or "host resolves to X,". */
const KIND_WORDS: Record<RefusedAddressKind, string> = {
  unspecified: 'an unspecified address',
  loopback: 'a loopback address',
  private: 'a private address',
  shared: 'a shared (carrier-grade NAT) address',
  'link-local': 'a link-local address',
  multicast: 'a multicast address',
  broadcast: 'a broadcast address',
  reserved: 'a reserved address',
  anycast: 'an anycast service address',
  teredo: 'a Teredo address',
  'outside-global-unicast': 'an IPv6 address outside global unicast (2000::/3)',
  'not-an-address': 'not an IP address',
};

/**
 * ipaddr.js's names for the special-purpose ranges (`range()`), as the kinds a refusal names.
 * Its typings list fewer names than it returns, so this is keyed by string; a name it learns
 * later is refused as `reserved` until it is named here. The forms that carry an IPv4 address
 * (ipv4Mapped, rfc6052, 6to4) and Teredo are handled before a range is asked for.
 */
const RANGE_KINDS: Readonly<Record<string, RefusedAddressKind>> = {
  unspecified: 'unspecified',
  loopback: 'loopback',
  private: 'private',
  uniqueLocal: 'private',
  deprecatedSiteLocal: 'private',
  carrierGradeNat: 'shared',
  linkLocal: 'link-local',
  multicast: 'multicast',
  broadcast: 'broadcast',
  as112: 'anycast',
  as112v6: 'anycast',
  amt: 'anycast',
  teredo: 'teredo',
};

/** The kind of a non-unicast range, or null for `unicast`. */
function kindOfRange(range: string): RefusedAddressKind | null {
  return range === 'unicast' ? null : (RANGE_KINDS[range] ?? 'reserved');
}

const prefix = (cidr: string) => ipaddr.IPv6.parseCIDR(cidr);
/** Global unicast: every IPv6 address a public host has lies in it. */
const GLOBAL_UNICAST = prefix('2000::/3');
const NAT64_WELL_KNOWN = prefix('64:ff9b::/96');
const NAT64_LOCAL = prefix('64:ff9b:1::/48');
const SIX_TO_FOUR = prefix('2002::/16');
const TEREDO = prefix('2001::/32');

/**
 * Where RFC 6052 puts the IPv4 address for each prefix length a local-use NAT64 prefix
 * (64:ff9b:1::/48) can have: bytes of the IPv6 address, skipping byte 8 (bits 64 to 71, always
 * zero). The site chooses the length, so the guard cannot know which one applies and judges
 * every one, the /96 (the usual one) first.
 */
const LOCAL_NAT64_PLACES: readonly (readonly number[])[] = [
  [12, 13, 14, 15],
  [9, 10, 11, 12],
  [7, 9, 10, 11],
  [6, 7, 9, 10],
];

/** The IPv4 addresses an IPv6 address carries, and how; null when it carries none. */
function embeddedIpv4(address: ipaddr.IPv6): { ipv4: ipaddr.IPv4[]; form: EmbeddingForm } | null {
  const bytes = address.toByteArray();
  const ipv4At = (places: readonly number[]) => new ipaddr.IPv4(places.map((place) => bytes[place] ?? 0));
  if (address.isIPv4MappedAddress()) return { ipv4: [address.toIPv4Address()], form: 'IPv4-mapped' };
  if (address.match(NAT64_WELL_KNOWN)) return { ipv4: [ipv4At([12, 13, 14, 15])], form: 'NAT64' };
  if (address.match(NAT64_LOCAL)) return { ipv4: LOCAL_NAT64_PLACES.map(ipv4At), form: 'NAT64' };
  if (address.match(SIX_TO_FOUR)) return { ipv4: [ipv4At([2, 3, 4, 5])], form: '6to4' };
  return null;
}

function classifyIpv6(address: ipaddr.IPv6): AddressClass | null {
  const inner = embeddedIpv4(address);
  if (inner !== null) {
    for (const ipv4 of inner.ipv4) {
      const kind = kindOfRange(ipv4.range());
      if (kind !== null) return { kind, embeddedIpv4: ipv4.toString(), carriedAs: inner.form };
    }
    return null;
  }
  // Teredo tunnels to an IPv4 host through a relay the guard cannot see; it is never a callback's address.
  if (address.match(TEREDO)) return { kind: 'teredo', embeddedIpv4: null, carriedAs: null };
  const kind = kindOfRange(address.range());
  if (kind !== null) return { kind, embeddedIpv4: null, carriedAs: null };
  if (!address.match(GLOBAL_UNICAST)) return { kind: 'outside-global-unicast', embeddedIpv4: null, carriedAs: null };
  return null;
}

/**
 * Why an IP address is refused, or null for one a public host may have: an address is refused
 * unless ipaddr.js's `range()` says `unicast`, and an IPv6 one also unless it lies in 2000::/3.
 * An IPv6 form that carries an IPv4 address (IPv4-mapped, NAT64, 6to4) is judged by the IPv4
 * inside; Teredo is refused outright.
 */
export function classifyAddress(address: string): AddressClass | null {
  // Only what node:net calls an IP address is parsed: ipaddr.js would also read `0x7f.1` or `127.1`.
  const bare = address.replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 4) {
    const kind = kindOfRange(ipaddr.IPv4.parse(bare).range());
    return kind === null ? null : { kind, embeddedIpv4: null, carriedAs: null };
  }
  if (family === 6) return classifyIpv6(ipaddr.IPv6.parse(bare));
  return { kind: 'not-an-address', embeddedIpv4: null, carriedAs: null };
}

/** An address or host as the allow-list compares it: lowercase, IPv6 canonical, without brackets or a zone id. */
export function normalizeHost(host: string): string {
  const bare = host.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  const unzoned = bare.replace(/%.*$/, '');
  return isIP(unzoned) === 6 ? new URL(`http://[${unzoned}]/`).hostname.slice(1, -1) : bare;
}

function describeRefusal(found: AddressClass): string {
  const words = KIND_WORDS[found.kind];
  if (found.embeddedIpv4 === null) return words;
  return `${found.carriedAs === 'IPv4-mapped' ? 'an' : 'a'} ${found.carriedAs} form of ${found.embeddedIpv4}, ${words}`;
}

/**
 * Resolve `url`'s host and check every address. Refused when any address is not one a public
 * host may have (`classifyAddress`) and neither the host, nor that address, nor the IPv4 address
 * it carries is in `allowPrivate`; a refusal is final (retrying resolves the same), a failed
 * lookup is not.
 */
export async function checkDestination(url: URL, allowPrivate: readonly string[], resolve: Resolve): Promise<DestinationCheck> {
  const host = normalizeHost(url.hostname);
  const allowed = new Set(allowPrivate.map(normalizeHost));
  let addresses: ResolvedAddress[];
  if (isIP(host) !== 0) addresses = [{ address: host, family: isIP(host) }];
  else {
    try {
      addresses = await resolve(host);
    } catch (error) {
      const code = error instanceof Error && 'code' in error && typeof error.code === 'string' ? error.code : 'lookup failed';
      return { ok: false, error: `cannot resolve ${host} (${code})`, retryable: true };
    }
  }
  if (addresses.length === 0) return { ok: false, error: `cannot resolve ${host} (no addresses)`, retryable: true };
  if (allowed.has(host)) return { ok: true, host, addresses };
  for (const { address } of addresses) {
    const found = classifyAddress(address);
    if (found === null || allowed.has(normalizeHost(address)) || (found.embeddedIpv4 !== null && allowed.has(found.embeddedIpv4))) continue;
    const subject = address === host ? `${address} is` : `${host} resolves to ${address},`;
    return {
      ok: false,
      error: `refused: ${subject} ${describeRefusal(found)} (allow it in notifications.callback_allow_private if it is meant)`,
      retryable: false,
    };
  }
  return { ok: true, host, addresses };
}
