import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_CONFIG_PATH, loadConfig } from '../../server/config/load.ts';
import { CONFIG_DEFAULTS } from '../../server/config/schema.ts';
import { buildFileConfig, type FileConfig, parseFileConfig } from './support.ts';

// trust_proxy, allowed_hosts and throttle in interlock.yaml: their defaults, what each accepts,
// and every refusal naming its field (nothing is started with a bad one).

function parsed(mutate: (f: FileConfig) => void) {
  const file = buildFileConfig();
  mutate(file);
  return parseFileConfig(file);
}

function refusal(mutate: (f: FileConfig) => void): string {
  try {
    parsed(mutate);
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error('expected a ConfigError, but the config loaded');
}

describe('network and throttle settings', () => {
  it('default to believing no proxy, no names beyond the built-in ones, and the documented rates', () => {
    const config = loadConfig(DEFAULT_CONFIG_PATH);
    expect(config.network).toEqual({ trustProxy: false, allowedHosts: [] });
    expect(config.throttle).toEqual({
      agentToken: CONFIG_DEFAULTS.agentTokenRate,
      agentAddress: CONFIG_DEFAULTS.agentAddressRate,
      loginFailuresPerHour: CONFIG_DEFAULTS.loginFailuresPerHour,
      loginAddressFailuresPerHour: CONFIG_DEFAULTS.loginAddressFailuresPerHour,
    });
    expect(CONFIG_DEFAULTS).toMatchObject({
      agentTokenRate: { burst: 2_000, perSecond: 4_000 },
      agentAddressRate: { burst: 2_000, perSecond: 4_000 },
      loginFailuresPerHour: 100,
      loginAddressFailuresPerHour: 1_000,
    });
  });

  it.each<[string, (f: FileConfig) => void, unknown]>([
    ['one proxy in front', (f) => (f.trust_proxy = 1), { trustProxy: 1, allowedHosts: [] }],
    ['proxies by address, range and name', (f) => (f.trust_proxy = ['10.0.0.2', '10.0.0.0/8', 'fd00::/8', 'loopback']), { trustProxy: ['10.0.0.2', '10.0.0.0/8', 'fd00::/8', 'loopback'], allowedHosts: [] }],
    ['false written out', (f) => (f.trust_proxy = false), { trustProxy: false, allowedHosts: [] }],
    ['host names and addresses', (f) => (f.allowed_hosts = ['interlock.example.com', '10.0.0.5', '::1']), { trustProxy: false, allowedHosts: ['interlock.example.com', '10.0.0.5', '::1'] }],
  ])('accepts %s', (_what, mutate, network) => {
    expect(parsed(mutate).network).toEqual(network);
  });

  it('accepts rates and a ceiling of its own', () => {
    const config = parsed((f) => (f.throttle = { agent_token: { burst: 10, per_second: 5 }, login_failures_per_hour: 20, login_address_failures_per_hour: 300 }));
    expect(config.throttle).toEqual({ agentToken: { burst: 10, perSecond: 5 }, agentAddress: CONFIG_DEFAULTS.agentAddressRate, loginFailuresPerHour: 20, loginAddressFailuresPerHour: 300 });
  });

  it.each<[string, (f: FileConfig) => void, string]>([
    ['trust_proxy: true', (f) => (f.trust_proxy = true), 'trust_proxy: true would believe any address a client writes in X-Forwarded-For'],
    ['every IPv4 address as a proxy', (f) => (f.trust_proxy = ['10.0.0.2', '0.0.0.0/0']), 'trust_proxy[1]: "0.0.0.0/0" is every address: it would believe any address a client writes in X-Forwarded-For'],
    ['every IPv6 address as a proxy', (f) => (f.trust_proxy = ['::/0']), 'trust_proxy[0]: "::/0" is every address'],
    // proxy-addr matches an IPv4 client against an IPv4-mapped range as against the IPv4 range it maps.
    ['every IPv4 address, written IPv4-mapped, as a proxy', (f) => (f.trust_proxy = ['::ffff:0.0.0.0/96']), 'trust_proxy[0]: "::ffff:0.0.0.0/96" is every address'],
    ['no proxies', (f) => (f.trust_proxy = 0), 'trust_proxy: must be a whole number of proxies in front from 1 to 10'],
    ['eleven proxies', (f) => (f.trust_proxy = 11), 'trust_proxy: must be a whole number of proxies in front from 1 to 10'],
    ['a proxy count as text', (f) => (f.trust_proxy = '1'), 'trust_proxy: must be a number of proxies in front, a list of their addresses'],
    ['an empty proxy list', (f) => (f.trust_proxy = []), 'trust_proxy: must not be empty'],
    ['a proxy given by name', (f) => (f.trust_proxy = ['proxy.internal']), 'trust_proxy[0]: "proxy.internal" is not an IP address, a CIDR range'],
    ['a short IPv4 form', (f) => (f.trust_proxy = ['10.1']), 'trust_proxy[0]: "10.1" is not an IP address'],
    ['a bad CIDR', (f) => (f.trust_proxy = ['10.0.0.0/33']), 'trust_proxy[0]: "10.0.0.0/33" is not an IP address'],
    ['a proxy twice', (f) => (f.trust_proxy = ['10.0.0.2', '10.0.0.2']), 'trust_proxy[1]: "10.0.0.2" appears twice'],
    ['a host with a scheme', (f) => (f.allowed_hosts = ['https://interlock.example.com']), 'allowed_hosts[0]: "https://interlock.example.com" is not a host name or IP address'],
    ['a host with a port', (f) => (f.allowed_hosts = ['interlock.example.com:443']), 'allowed_hosts[0]: "interlock.example.com:443" is not a host name or IP address'],
    ['a host in capitals', (f) => (f.allowed_hosts = ['Interlock.example.com']), 'allowed_hosts[0]: "Interlock.example.com" must be written in lowercase'],
    ['a wildcard host', (f) => (f.allowed_hosts = ['*.example.com']), 'allowed_hosts[0]: "*.example.com" is not a host name'],
    ['allowed_hosts as one string', (f) => (f.allowed_hosts = 'interlock.example.com'), 'allowed_hosts: must be a list'],
    ['an unknown throttle key', (f) => (f.throttle = { login_failures: 5 }), 'throttle.login_failures: unknown key'],
    ['a rate with no burst', (f) => (f.throttle = { agent_token: { per_second: 5 } }), 'throttle.agent_token.burst: is required'],
    ['a rate of nothing', (f) => (f.throttle = { agent_address: { burst: 10, per_second: 0 } }), 'throttle.agent_address.per_second: must be a whole number of requests from 1 to 1000000, got 0'],
    ['a fractional burst', (f) => (f.throttle = { agent_token: { burst: 2.5, per_second: 5 } }), 'throttle.agent_token.burst: must be a whole number of requests'],
    ['a ceiling of none', (f) => (f.throttle = { login_failures_per_hour: 0 }), 'throttle.login_failures_per_hour: must be a whole number of failed logins from 1 to 1000000, got 0'],
    ['an address ceiling as text', (f) => (f.throttle = { login_address_failures_per_hour: '500' }), 'throttle.login_address_failures_per_hour: must be a whole number of failed logins from 1 to 1000000, got "500"'],
  ])('refuses %s, naming the field', (_what, mutate, expected) => {
    expect(refusal(mutate)).toContain(`interlock.yaml: ${expected}`);
  });
});
