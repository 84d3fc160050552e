import ipaddr from 'ipaddr.js';
import { type Checker, describeHost, describeValue, type Mapping } from './check.ts';
import { CONFIG_DEFAULTS, configLimits, type NetworkConfig, type RateRuleConfig, type ThrottleConfig } from './schema.ts';

/** Names proxy-addr (Fastify's trustProxy) gives to address ranges, besides addresses and CIDRs. */
export const PROXY_RANGE_NAMES: readonly string[] = ['loopback', 'linklocal', 'uniquelocal'];

/** A host name as a Host header carries it (without its port): DNS labels, or an IP address. */
const HOST_NAME = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

/** `trust_proxy` and `allowed_hosts`: which proxies' word on the client's address is believed, and which Host names are served. */
export function readNetwork(c: Checker, top: Mapping): NetworkConfig {
  return {
    trustProxy: top.trust_proxy === undefined ? false : readTrustProxy(c, top.trust_proxy),
    allowedHosts: top.allowed_hosts === undefined ? [] : c.distinct(top.allowed_hosts, 'allowed_hosts', (item, path) => readHostName(c, item, path)),
  };
}

function readTrustProxy(c: Checker, value: unknown): NetworkConfig['trustProxy'] {
  const field = 'trust_proxy';
  if (value === false) return false;
  if (value === true) {
    c.fail(field, 'true would believe any address a client writes in X-Forwarded-For; give how many proxies stand in front (1 for one TLS proxy) or their addresses');
  }
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value < 1 || value > configLimits.proxyHopsMax) {
      c.fail(field, `must be a whole number of proxies in front from 1 to ${configLimits.proxyHopsMax}, a list of their addresses, or false; got ${describeValue(value)}`);
    }
    return value;
  }
  if (!Array.isArray(value)) c.fail(field, `must be a number of proxies in front, a list of their addresses (10.0.0.2, 10.0.0.0/8, loopback), or false; got ${describeValue(value)}`);
  return c.distinct(value, field, (item, path) => readProxyAddress(c, item, path, 'proxy'), { nonEmpty: true });
}

/** What an address list says of its addresses: proxies whose word is believed, or scrapers let in. */
export type AddressRole = 'proxy' | 'scraper';

/** Why a range of every address is refused, by what the list's addresses are. */
const EVERY_ADDRESS_WHY: Record<AddressRole, string> = {
  proxy: 'it would believe any address a client writes in X-Forwarded-For; name the proxies that stand in front, or how many there are',
  scraper: 'anyone who reaches the port could read the metrics; to scrape from anywhere, give the scraper a token (token_sha256)',
};

/**
 * Whether a CIDR range holds every address of its family: a /0, or, as a proxy, the IPv4-mapped
 * range of every IPv4 address (::ffff:0.0.0.0/96), which proxy-addr matches against IPv4 clients
 * as the IPv4 range it maps (the metrics' check judges an IPv4 client by IPv4 ranges only).
 */
function coversEveryAddress(cidr: string, role: AddressRole): boolean {
  const [range, prefix] = ipaddr.parseCIDR(cidr);
  if (prefix === 0) return true;
  return role === 'proxy' && prefix === 96 && 'isIPv4MappedAddress' in range && range.isIPv4MappedAddress();
}

/** A proxy's (or scraper's) address, a range of them in CIDR form, or one of proxy-addr's named ranges. */
export function readProxyAddress(c: Checker, value: unknown, path: string, role: AddressRole): string {
  const text = c.string(value, path);
  if (PROXY_RANGE_NAMES.includes(text)) return text;
  if (isIpAddress(text)) return text;
  if (ipaddr.IPv4.isValidCIDRFourPartDecimal(text) || ipaddr.IPv6.isValidCIDR(text)) {
    // A range of every address lets anyone in: as a proxy, anyone's X-Forwarded-For is believed.
    if (coversEveryAddress(text, role)) c.fail(path, `${describeHost(text)} is every address: ${EVERY_ADDRESS_WHY[role]}`);
    return text;
  }
  return c.fail(path, `${describeHost(text)} is not an IP address, a CIDR range (10.0.0.0/8) or one of ${PROXY_RANGE_NAMES.join(', ')}`);
}

/** An address as people write it: four decimal parts, or IPv6 (ipaddr.js alone would take `1` or `0x7f.1`). */
function isIpAddress(text: string): boolean {
  return ipaddr.IPv4.isValidFourPartDecimal(text) || ipaddr.IPv6.isValid(text);
}

/** A name the server is reached by, lowercase and without a port: `interlock.example.com`, `10.0.0.5`, `::1`. */
function readHostName(c: Checker, value: unknown, path: string): string {
  const text = c.string(value, path);
  if (text !== text.toLowerCase()) c.fail(path, `${describeHost(text)} must be written in lowercase`);
  if (isIpAddress(text) || HOST_NAME.test(text)) return text;
  return c.fail(path, `${describeHost(text)} is not a host name or IP address (no scheme, port or path: interlock.example.com)`);
}

/** `throttle`: agents' request rates on /v1 and the per-name and per-address ceilings on failed logins. */
export function readThrottle(c: Checker, value: unknown): ThrottleConfig {
  const raw: Mapping =
    value === undefined ? {} : c.mapping(value, 'throttle', ['agent_token', 'agent_address', 'login_failures_per_hour', 'login_address_failures_per_hour']);
  return {
    agentToken: readRateRule(c, raw.agent_token, 'throttle.agent_token', CONFIG_DEFAULTS.agentTokenRate),
    agentAddress: readRateRule(c, raw.agent_address, 'throttle.agent_address', CONFIG_DEFAULTS.agentAddressRate),
    loginFailuresPerHour: readPerHour(c, raw.login_failures_per_hour, 'throttle.login_failures_per_hour', CONFIG_DEFAULTS.loginFailuresPerHour),
    loginAddressFailuresPerHour: readPerHour(
      c,
      raw.login_address_failures_per_hour,
      'throttle.login_address_failures_per_hour',
      CONFIG_DEFAULTS.loginAddressFailuresPerHour,
    ),
  };
}

function readPerHour(c: Checker, value: unknown, path: string, fallback: number): number {
  const perHour = value ?? fallback;
  if (typeof perHour !== 'number' || !Number.isSafeInteger(perHour) || perHour < 1 || perHour > configLimits.loginFailuresPerHourMax) {
    c.fail(path, `must be a whole number of failed logins from 1 to ${configLimits.loginFailuresPerHourMax}, got ${describeValue(perHour)}`);
  }
  return perHour;
}

function readRateRule(c: Checker, value: unknown, path: string, fallback: RateRuleConfig): RateRuleConfig {
  if (value === undefined) return fallback;
  const raw = c.mapping(value, path, ['burst', 'per_second'], ['burst', 'per_second']);
  const whole = (given: unknown, field: string): number => {
    if (typeof given !== 'number' || !Number.isSafeInteger(given) || given < 1 || given > configLimits.requestsPerSecondMax) {
      c.fail(`${path}.${field}`, `must be a whole number of requests from 1 to ${configLimits.requestsPerSecondMax}, got ${describeValue(given)}`);
    }
    return given;
  };
  return { burst: whole(raw.burst, 'burst'), perSecond: whole(raw.per_second, 'per_second') };
}
