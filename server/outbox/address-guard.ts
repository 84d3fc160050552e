import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';

// Outgoing requests to URLs from the config (an agent's callback, a webhook, a Slack URL) must not
// become a way into the network Interlock runs in: the host is resolved, every address it has is
// checked, and the request then connects to a checked address only, so a second DNS answer (DNS
// rebinding) cannot swap in another one.

/** Kinds of address a request is refused for unless the config allows the host or address. */
export const REFUSED_ADDRESS_KINDS = ['private', 'loopback', 'link-local', 'unspecified', 'shared', 'multicast', 'reserved'] as const;
/** One refused kind. */
export type RefusedAddressKind = (typeof REFUSED_ADDRESS_KINDS)[number];

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

/** A refused address: its kind, and the IPv4 address inside it when it is an IPv4-mapped (or NAT64, 6to4) form. */
export interface AddressClass {
  kind: RefusedAddressKind;
  embeddedIpv4: string | null;
}

const IPV4_RANGES: [number[], number, RefusedAddressKind][] = [
  [[0, 0, 0, 0], 8, 'unspecified'],
  [[10, 0, 0, 0], 8, 'private'],
  [[100, 64, 0, 0], 10, 'shared'],
  [[127, 0, 0, 0], 8, 'loopback'],
  [[169, 254, 0, 0], 16, 'link-local'],
  [[172, 16, 0, 0], 12, 'private'],
  [[192, 0, 0, 0], 24, 'reserved'],
  [[192, 168, 0, 0], 16, 'private'],
  [[198, 18, 0, 0], 15, 'reserved'],
  [[224, 0, 0, 0], 4, 'multicast'],
  [[240, 0, 0, 0], 4, 'reserved'],
];

const IPV6_RANGES: [number[], number, RefusedAddressKind][] = [
  [[0xfc], 7, 'private'],
  [[0xfe, 0x80], 10, 'link-local'],
  [[0xfe, 0xc0], 10, 'private'],
  [[0xff], 8, 'multicast'],
];

function inRange(bytes: readonly number[], prefix: readonly number[], bits: number): boolean {
  for (let bit = 0; bit < bits; bit++) {
    const mask = 0x80 >> (bit % 8);
    if (((bytes[bit >> 3] ?? 0) & mask) !== ((prefix[bit >> 3] ?? 0) & mask)) return false;
  }
  return true;
}

function ipv4Bytes(text: string): number[] {
  return text.split('.').map(Number);
}

/** The 16 bytes of an IPv6 address (a zone id is dropped), or null when it is not one. */
function ipv6Bytes(text: string): number[] | null {
  const address = text.replace(/%.*$/, '');
  if (isIP(address) !== 6) return null;
  // The URL parser writes an IPv6 address canonically: hex groups only, `::` at most once.
  const canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  const [head = '', tail] = canonical.split('::');
  const groups = (part: string) => (part === '' ? [] : part.split(':').map((group) => Number.parseInt(group, 16)));
  const before = groups(head);
  const after = tail === undefined ? [] : groups(tail);
  const words = [...before, ...new Array<number>(8 - before.length - after.length).fill(0), ...after];
  return words.flatMap((word) => [word >> 8, word & 0xff]);
}

function classifyIpv4(bytes: readonly number[]): RefusedAddressKind | null {
  return IPV4_RANGES.find(([prefix, bits]) => inRange(bytes, prefix, bits))?.[2] ?? null;
}

const isZero = (bytes: readonly number[]) => bytes.every((b) => b === 0);

/** The IPv4 address an IPv6 one carries: IPv4-mapped (::ffff:0:0/96), NAT64 (64:ff9b::/96), 6to4 (2002::/16). */
function embeddedIpv4(bytes: readonly number[]): number[] | null {
  if (isZero(bytes.slice(0, 10)) && bytes[10] === 0xff && bytes[11] === 0xff) return bytes.slice(12);
  if (inRange(bytes, [0x00, 0x64, 0xff, 0x9b], 32) && isZero(bytes.slice(4, 12))) return bytes.slice(12);
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return bytes.slice(2, 6);
  return null;
}

/** Why an IP address is refused, or null for a public one. */
export function classifyAddress(address: string): AddressClass | null {
  if (isIP(address) === 4) {
    const kind = classifyIpv4(ipv4Bytes(address));
    return kind === null ? null : { kind, embeddedIpv4: null };
  }
  const bytes = ipv6Bytes(address);
  if (bytes === null) return { kind: 'reserved', embeddedIpv4: null };
  if (isZero(bytes)) return { kind: 'unspecified', embeddedIpv4: null };
  if (isZero(bytes.slice(0, 15)) && bytes[15] === 1) return { kind: 'loopback', embeddedIpv4: null };
  const inner = embeddedIpv4(bytes);
  if (inner !== null) {
    const kind = classifyIpv4(inner);
    return kind === null ? null : { kind, embeddedIpv4: inner.join('.') };
  }
  // ::/96 (IPv4-compatible, deprecated) and ::/128 forms no public host uses.
  if (isZero(bytes.slice(0, 12))) return { kind: 'reserved', embeddedIpv4: null };
  const kind = IPV6_RANGES.find(([prefix, bits]) => inRange(bytes, prefix, bits))?.[2] ?? null;
  return kind === null ? null : { kind, embeddedIpv4: null };
}

/** An address or host as the allow-list compares it: lowercase, IPv6 canonical and without brackets. */
export function normalizeHost(host: string): string {
  const bare = host.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  return isIP(bare) === 6 ? new URL(`http://[${bare}]/`).hostname.slice(1, -1) : bare;
}

function describeRefusal(found: AddressClass): string {
  const article = /^[aeiou]/.test(found.kind) ? 'an' : 'a';
  return found.embeddedIpv4 === null ? `${article} ${found.kind} address` : `an IPv4-mapped form of ${found.embeddedIpv4}, ${article} ${found.kind} address`;
}

/**
 * Resolve `url`'s host and check every address. Refused when any address is private, loopback,
 * link-local, unspecified (or another non-public kind) and neither the host nor that address is
 * in `allowPrivate`; a refusal is final (retrying resolves the same), a failed lookup is not.
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
