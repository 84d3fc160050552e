import { describe, expect, it } from 'vitest';
import { classifyAddress } from '../../server/outbox/address-guard.ts';

// The address guard's verdict on every entry of both IANA special-purpose address registries
// (the IPv4 and the IPv6 Special-Purpose Address Registry, RFC 6890 and the RFCs that added to
// them since, RFC 8190 among them), as listed in the IANA registries: written into this test on
// 2026-12-04, from those RFCs, not fetched. A registry entry that is not globally reachable is
// never let through; an IPv6 form that carries an IPv4 address (IPv4-mapped, NAT64, 6to4) is
// judged by the IPv4 inside. Where the registry calls a block globally reachable the guard may
// still refuse it (anycast services and identifiers no agent's callback lives on): the last
// column says what it does, and the test below it that it never lets through what IANA does not.

/** The registry's "Globally Reachable": true, false, or N/A (a deprecated or translating block). */
type Reachable = true | false | 'n/a';
/** What the guard does with an address. */
type Verdict = 'refused' | 'allowed';
/** One registry entry: its block, its name, whether IANA calls it globally reachable, and addresses in it with the guard's verdict on each. */
type RegistryEntry = [block: string, name: string, reachable: Reachable, tried: Record<string, Verdict>];

const refused = (...addresses: string[]): Record<string, Verdict> => Object.fromEntries(addresses.map((address) => [address, 'refused']));

const IPV4_REGISTRY: RegistryEntry[] = [
  ['0.0.0.0/8', '"This network" (RFC 791)', false, refused('0.0.0.1', '0.255.255.255')],
  ['0.0.0.0/32', '"This host on this network" (RFC 1122)', false, refused('0.0.0.0')],
  ['10.0.0.0/8', 'Private-Use (RFC 1918)', false, refused('10.0.0.0', '10.1.2.3', '10.255.255.255')],
  ['100.64.0.0/10', 'Shared Address Space (RFC 6598)', false, refused('100.64.0.0', '100.100.100.200', '100.127.255.255')],
  ['127.0.0.0/8', 'Loopback (RFC 1122)', false, refused('127.0.0.1', '127.255.255.255')],
  ['169.254.0.0/16', 'Link Local (RFC 3927)', false, refused('169.254.0.0', '169.254.169.254', '169.254.255.255')],
  ['172.16.0.0/12', 'Private-Use (RFC 1918)', false, refused('172.16.0.0', '172.31.255.255')],
  ['192.0.0.0/24', 'IETF Protocol Assignments (RFC 6890)', false, refused('192.0.0.0', '192.0.0.100', '192.0.0.255')],
  ['192.0.0.0/29', 'IPv4 Service Continuity Prefix (RFC 7335)', false, refused('192.0.0.1', '192.0.0.7')],
  ['192.0.0.8/32', 'IPv4 dummy address (RFC 7600)', false, refused('192.0.0.8')],
  ['192.0.0.9/32', 'Port Control Protocol Anycast (RFC 7723)', true, refused('192.0.0.9')],
  ['192.0.0.10/32', 'Traversal Using Relays around NAT Anycast (RFC 8155)', true, refused('192.0.0.10')],
  ['192.0.0.170/32', 'NAT64/DNS64 Discovery (RFC 8880)', false, refused('192.0.0.170')],
  ['192.0.0.171/32', 'NAT64/DNS64 Discovery (RFC 8880)', false, refused('192.0.0.171')],
  ['192.0.2.0/24', 'Documentation (TEST-NET-1) (RFC 5737)', false, refused('192.0.2.0', '192.0.2.2', '192.0.2.255')],
  ['192.31.196.0/24', 'AS112-v4 (RFC 7535)', true, refused('192.31.196.0', '192.31.196.255')],
  ['192.52.193.0/24', 'AMT (RFC 7450)', true, refused('192.52.193.0', '192.52.193.255')],
  ['192.88.99.0/24', 'Deprecated (6to4 Relay Anycast) (RFC 7526)', 'n/a', refused('192.88.99.0', '192.88.99.1', '192.88.99.255')],
  ['192.88.99.2/32', '6a44-relay anycast address (RFC 6751)', true, refused('192.88.99.2')],
  ['192.168.0.0/16', 'Private-Use (RFC 1918)', false, refused('192.168.0.0', '192.168.1.1', '192.168.255.255')],
  ['192.175.48.0/24', 'Direct Delegation AS112 Service (RFC 7534)', true, refused('192.175.48.0', '192.175.48.255')],
  ['198.18.0.0/15', 'Benchmarking (RFC 2544)', false, refused('198.18.0.0', '198.19.255.255')],
  ['198.51.100.0/24', 'Documentation (TEST-NET-2) (RFC 5737)', false, refused('198.51.100.0', '198.51.100.7', '198.51.100.255')],
  ['203.0.113.0/24', 'Documentation (TEST-NET-3) (RFC 5737)', false, refused('203.0.113.0', '203.0.113.9', '203.0.113.255')],
  ['240.0.0.0/4', 'Reserved (RFC 1112)', false, refused('240.0.0.0', '254.255.255.255')],
  ['255.255.255.255/32', 'Limited Broadcast (RFC 8190, RFC 919)', false, refused('255.255.255.255')],
];

const IPV6_REGISTRY: RegistryEntry[] = [
  ['::1/128', 'Loopback Address (RFC 4291)', false, refused('::1')],
  ['::/128', 'Unspecified Address (RFC 4291)', false, refused('::')],
  [
    '::ffff:0:0/96',
    'IPv4-mapped Address (RFC 4291): judged by the IPv4 inside, the address it connects to',
    false,
    { '::ffff:0.0.0.0': 'refused', '::ffff:127.0.0.1': 'refused', '::ffff:192.0.2.2': 'refused', '::ffff:ffff:ffff': 'refused', '::ffff:8.8.8.8': 'allowed' },
  ],
  [
    '64:ff9b::/96',
    'IPv4-IPv6 Translat. (RFC 6052): judged by the IPv4 in its last 32 bits',
    true,
    { '64:ff9b::': 'refused', '64:ff9b::a00:1': 'refused', '64:ff9b::c000:202': 'refused', '64:ff9b::ffff:ffff': 'refused', '64:ff9b::808:808': 'allowed' },
  ],
  [
    '64:ff9b:1::/48',
    'IPv4-IPv6 Translat., local use (RFC 8215): the site picks a prefix of /48 to /96, so the IPv4 is judged at every place RFC 6052 could put it',
    false,
    {
      '64:ff9b:1::': 'refused',
      '64:ff9b:1::a00:1': 'refused',
      '64:ff9b:1::808:808': 'refused',
      '64:ff9b:1:fffe::808:808': 'refused',
      '64:ff9b:1:ffff:ffff:ffff:ffff:ffff': 'refused',
      '64:ff9b:1:808:8:808:808:808': 'allowed',
    },
  ],
  ['100::/64', 'Discard-Only Address Block (RFC 6666)', false, refused('100::', '100::ffff:ffff:ffff:ffff')],
  ['100:0:0:1::/64', 'Dummy IPv6 Prefix (RFC 9780)', false, refused('100:0:0:1::', '100:0:0:1:ffff:ffff:ffff:ffff')],
  ['2001::/23', 'IETF Protocol Assignments (RFC 2928)', false, refused('2001:100::', '2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff')],
  ['2001::/32', 'TEREDO (RFC 4380, RFC 8190): refused outright, it tunnels to a host the guard cannot see', 'n/a', refused('2001::', '2001:0:4136:e378:8000:63bf:3fff:fdd2', '2001:0:ffff:ffff:ffff:ffff:ffff:ffff')],
  ['2001:1::1/128', 'Port Control Protocol Anycast (RFC 7723)', true, refused('2001:1::1')],
  ['2001:1::2/128', 'Traversal Using Relays around NAT Anycast (RFC 8155)', true, refused('2001:1::2')],
  ['2001:1::3/128', 'DNS-SD Service Registration Protocol Anycast (RFC 9665)', true, refused('2001:1::3')],
  ['2001:2::/48', 'Benchmarking (RFC 5180)', false, refused('2001:2::', '2001:2:0:ffff:ffff:ffff:ffff:ffff')],
  ['2001:3::/32', 'AMT (RFC 7450)', true, refused('2001:3::', '2001:3:ffff:ffff:ffff:ffff:ffff:ffff')],
  ['2001:4:112::/48', 'AS112-v6 (RFC 7535)', true, refused('2001:4:112::', '2001:4:112:ffff:ffff:ffff:ffff:ffff')],
  ['2001:10::/28', 'Deprecated (previously ORCHID) (RFC 4843)', 'n/a', refused('2001:10::', '2001:1f:ffff:ffff:ffff:ffff:ffff:ffff')],
  ['2001:20::/28', 'ORCHIDv2 (RFC 7343)', true, refused('2001:20::', '2001:2f:ffff:ffff:ffff:ffff:ffff:ffff')],
  ['2001:30::/28', 'Drone Remote ID Protocol Entity Tags (DETs) Prefix (RFC 9374)', true, refused('2001:30::', '2001:3f:ffff:ffff:ffff:ffff:ffff:ffff')],
  ['2001:db8::/32', 'Documentation (RFC 3849)', false, refused('2001:db8::', '2001:db8::1', '2001:db8:ffff:ffff:ffff:ffff:ffff:ffff')],
  [
    '2002::/16',
    '6to4 (RFC 3056): judged by the IPv4 in bits 16 to 47',
    'n/a',
    { '2002::': 'refused', '2002:c0a8:101::1': 'refused', '2002:c000:202::1': 'refused', '2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff': 'refused', '2002:808:808::1': 'allowed' },
  ],
  ['2620:4f:8000::/48', 'Direct Delegation AS112 Service (RFC 7534)', true, refused('2620:4f:8000::', '2620:4f:8000:ffff:ffff:ffff:ffff:ffff')],
  ['3fff::/20', 'Documentation (RFC 9637)', false, refused('3fff::', '3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff')],
  ['5f00::/16', 'Segment Routing (SRv6) SIDs (RFC 9602)', false, refused('5f00::', '5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff')],
  ['fc00::/7', 'Unique-Local (RFC 4193, RFC 8190)', false, refused('fc00::', 'fd12:3456::1', 'fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff')],
  ['fe80::/10', 'Link-Local Unicast (RFC 4291)', false, refused('fe80::', 'fe80::1', 'fe80::1%eth0', 'febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff')],
];

const verdictOf = (address: string): Verdict => (classifyAddress(address) === null ? 'allowed' : 'refused');

describe.each([
  ['IPv4', IPV4_REGISTRY],
  ['IPv6', IPV6_REGISTRY],
])('the %s special-purpose address registry, entry by entry', (_family, registry) => {
  it.each(registry)('%s, %s (globally reachable: %s)', (_block, _name, _reachable, tried) => {
    expect(Object.fromEntries(Object.keys(tried).map((address) => [address, verdictOf(address)]))).toEqual(tried);
  });

  it('lets nothing through that the registry calls not globally reachable, but by the public IPv4 address it carries', () => {
    const carriesIpv4 = new Set(['::ffff:0:0/96', '64:ff9b:1::/48']);
    const through = registry.filter(([block, , reachable, tried]) => reachable === false && !carriesIpv4.has(block) && Object.values(tried).includes('allowed'));
    expect(through).toEqual([]);
  });
});

describe('addresses outside the registries', () => {
  it.each([
    ['8.8.8.8', 'allowed'],
    ['93.184.216.34', 'allowed'],
    ['172.32.0.1', 'allowed'],
    ['192.0.1.255', 'allowed'],
    ['192.0.3.0', 'allowed'],
    ['2606:4700::1111', 'allowed'],
    ['2a00:1450:4001::200e', 'allowed'],
    ['224.0.0.1', 'refused'],
    ['239.255.255.250', 'refused'],
    ['ff02::1', 'refused'],
    ['fec0::1', 'refused'],
    // IPv6 outside 2000::/3, the global unicast block, is refused whatever else it is.
    ['::808:808', 'refused'],
    ['::ffff:0:808:808', 'refused'],
    ['4000::1', 'refused'],
    ['e000::1', 'refused'],
  ] as const)('%s is %s', (address, verdict) => {
    expect(verdictOf(address)).toBe(verdict);
  });

  it('names what an address is and, for an IPv6 form, the IPv4 inside and how it is carried', () => {
    expect(classifyAddress('192.0.2.2')).toEqual({ kind: 'reserved', embeddedIpv4: null, carriedAs: null });
    expect(classifyAddress('::ffff:7f00:1')).toEqual({ kind: 'loopback', embeddedIpv4: '127.0.0.1', carriedAs: 'IPv4-mapped' });
    expect(classifyAddress('64:ff9b::a9fe:a9fe')).toEqual({ kind: 'link-local', embeddedIpv4: '169.254.169.254', carriedAs: 'NAT64' });
    expect(classifyAddress('64:ff9b:1::a00:1')).toEqual({ kind: 'private', embeddedIpv4: '10.0.0.1', carriedAs: 'NAT64' });
    expect(classifyAddress('2002:c0a8:101::1')).toEqual({ kind: 'private', embeddedIpv4: '192.168.1.1', carriedAs: '6to4' });
    expect(classifyAddress('2001::1')).toEqual({ kind: 'teredo', embeddedIpv4: null, carriedAs: null });
    expect(classifyAddress('::808:808')).toEqual({ kind: 'outside-global-unicast', embeddedIpv4: null, carriedAs: null });
    expect(classifyAddress('localhost')).toEqual({ kind: 'not-an-address', embeddedIpv4: null, carriedAs: null });
  });
});

describe('what a refused address is called', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['0.0.0.0', 'unspecified'],
    ['100.100.100.200', 'shared'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['192.0.2.2', 'reserved'],
    ['198.51.100.7', 'reserved'],
    ['203.0.113.9', 'reserved'],
    ['192.88.99.1', 'reserved'],
    ['192.175.48.1', 'anycast'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['fec0::1', 'private'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['64:ff9b::a9fe:a9fe', 'link-local'],
    ['2002:c0a8:0101::1', 'private'],
    ['2001::1', 'teredo'],
    ['2001:db8::1', 'reserved'],
    ['100::1', 'reserved'],
    ['2620:4f:8000::1', 'anycast'],
    ['::808:808', 'outside-global-unicast'],
  ])('%s is %s', (address, kind) => {
    expect(classifyAddress(address)?.kind).toBe(kind);
  });
});
