import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { stringify } from 'yaml';
import { ConfigError, DEFAULT_CONFIG_PATH, loadConfig, parseConfig } from '../../server/config/load.ts';
import { tokenMatches, verifyPassword } from '../../server/config/secrets.ts';
import { buildFileConfig, DEMO_TOKEN_SHA256, type FileConfig, parseFileConfig } from './support.ts';

/** The error a config would raise, or a failure when it loads. */
function configError(load: () => unknown): ConfigError {
  try {
    load();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError, but the config loaded');
}

describe('the example interlock.yaml', () => {
  it('loads from the project root by default, for the sandbox demo, with the clock endpoint off', () => {
    const config = loadConfig(DEFAULT_CONFIG_PATH);
    expect(config).toMatchObject({
      inboxName: 'inbox',
      approvalMaxAgeMs: 4 * 3_600_000,
      slaTickMs: 5_000,
      stripe: { mode: 'sandbox' },
      sessions: { idleMs: 30 * 60_000, absoluteMs: 720 * 60_000 },
      testMode: false,
    });
    expect(config.rules.map((r) => r.kind)).toEqual(['amount_at_most', 'no_flags', 'not_disputed', 'fits_remaining']);
    expect(config.routes.map((r) => [r.name, r.chain, r.slaMs])).toEqual([
      ['flagged', ['risk'], null],
      ['crash', ['payments-ops'], null],
      ['large', ['controller', 'finance-manager'], 4 * 3_600_000],
      ['default', ['ap-leads', 'finance-manager'], 4 * 3_600_000],
    ]);
    expect(config.groups).toEqual({ 'ap-leads': ['ana', 'bea'], controller: ['cy'], 'finance-manager': ['fm'], 'payments-ops': ['ops'], risk: ['rita'] });
  });

  it('has seven people whose demo password is interlock-demo, fin the only finance person', async () => {
    const { people } = loadConfig(DEFAULT_CONFIG_PATH);
    expect(people.map((p) => `${p.name}:${p.role}`)).toEqual([
      'ana:approver',
      'bea:approver',
      'cy:approver',
      'fm:approver',
      'ops:approver',
      'rita:approver',
      'fin:finance',
    ]);
    const verified = await Promise.all(people.map((p) => verifyPassword('interlock-demo', p.passwordHash)));
    expect(verified).toEqual(people.map(() => true));
  });

  it('stores only the hash of the support-bot demo token', () => {
    const { agents } = loadConfig(DEFAULT_CONFIG_PATH);
    expect(agents).toEqual([{ name: 'support-bot', tokenSha256: DEMO_TOKEN_SHA256 }]);
    expect(tokenMatches('sk_agent_demo_support_bot', agents[0]!.tokenSha256)).toBe(true);
  });
});

describe('loading', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('converts minutes and seconds to ms and keeps money in minor units by currency', () => {
    const config = parseFileConfig({ ...buildFileConfig(), sla_tick_seconds: 7, sessions: { idle_minutes: 5, absolute_minutes: 60 } });
    expect(config.approvalMaxAgeMs).toBe(240 * 60_000);
    expect(config.slaTickMs).toBe(7_000);
    expect(config.sessions).toEqual({ idleMs: 5 * 60_000, absoluteMs: 60 * 60_000 });
    expect(config.rules[0]).toEqual({ kind: 'amount_at_most', name: 'amount under $50', amount: { usd: 5_000 } });
    expect(config.routes[2]!.when).toEqual({ amountOver: { usd: 20_000 } });
  });

  it('fills the optional keys with their defaults', () => {
    const config = parseFileConfig(buildFileConfig());
    expect(config).toMatchObject({ inboxName: 'inbox', slaTickMs: 5_000, sessions: { idleMs: 1_800_000, absoluteMs: 43_200_000 }, testMode: false });
  });

  it('takes approval_max_age_minutes: null as approvals that never expire', () => {
    expect(parseFileConfig({ ...buildFileConfig(), approval_max_age_minutes: null }).approvalMaxAgeMs).toBeNull();
  });

  it('accepts an explicit empty rules list, under which everything clears with no person', () => {
    expect(parseFileConfig({ ...buildFileConfig(), rules: [] }).rules).toEqual([]);
  });

  it('accepts JSON, which is YAML', () => {
    const config = parseConfig(JSON.stringify(buildFileConfig()), 'interlock.json');
    expect(config.routes.map((r) => r.name)).toEqual(['flagged', 'crash', 'large', 'default']);
  });

  // INTERLOCK_CONFIG is read by server/config/env.ts, which hands its path here (test/http/env.test.ts).
  it('reads the file at the path it is given', () => {
    const dir = mkdtempSync(join(tmpdir(), 'interlock-config-'));
    const file = join(dir, 'other.json');
    writeFileSync(file, JSON.stringify({ ...buildFileConfig(), inbox_name: 'elsewhere' }));
    vi.stubEnv('INTERLOCK_CONFIG', '/nonexistent/interlock.yaml');
    expect(loadConfig(file).inboxName).toBe('elsewhere');
  });

  it('a missing file is a ConfigError naming the path', () => {
    const error = configError(() => loadConfig('/nonexistent/interlock.yaml'));
    expect(error.message).toBe(
      "/nonexistent/interlock.yaml: (file): cannot be read (ENOENT); set INTERLOCK_CONFIG to the config file's path",
    );
  });

  it('every error is a ConfigError with code config_invalid and the field it names', () => {
    const file = buildFileConfig();
    file.routes[2]!.chain = ['controler'];
    const error = configError(() => parseFileConfig(file));
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.code).toBe('config_invalid');
    expect(error.field).toBe('routes[2].chain[0]');
    expect(error.message).toBe('interlock.yaml: routes[2].chain[0]: group "controler" is not defined in groups');
  });
});

type Mutation = (file: FileConfig) => void;
const rule = (file: FileConfig, i: number) => file.rules[i]!;
const route = (file: FileConfig, i: number) => file.routes[i]!;
const person = (file: FileConfig, i: number) => file.people[i]!;

// Each row breaks one thing in a valid file; the message must name the exact field.
const BAD_FIELDS: [string, Mutation, string][] = [
  ['an unknown top-level key', (f) => (f.routing = []), 'routing: unknown key (expected one of inbox_name,'],
  ['no routes', (f) => delete (f as Partial<FileConfig>).routes, 'routes: is required'],
  ['no approval window at all', (f) => delete f.approval_max_age_minutes, 'approval_max_age_minutes: is required'],
  ['a zero approval window', (f) => (f.approval_max_age_minutes = 0), 'approval_max_age_minutes: must be a positive whole number of minutes, got 0'],
  ['a fractional approval window', (f) => (f.approval_max_age_minutes = 1.5), 'approval_max_age_minutes: must be a positive whole number of minutes'],
  ['a window over a year', (f) => (f.approval_max_age_minutes = 600_000), 'approval_max_age_minutes: must be at most 527040 minutes'],
  ['a zero SLA tick', (f) => (f.sla_tick_seconds = 0), 'sla_tick_seconds: must be a whole number of seconds from 1 to 3600'],
  ['an invalid inbox name', (f) => (f.inbox_name = 'My Inbox'), 'inbox_name: "My Inbox" is not a valid name'],
  ['the inbox named policy', (f) => (f.inbox_name = 'policy'), 'inbox_name: "policy" is reserved'],
  ['an unknown rule kind', (f) => (rule(f, 0).kind = 'amount_under'), 'rules[0].kind: "amount_under" is not a rule kind (expected one of amount_at_most,'],
  ['a rule with no kind', (f) => delete rule(f, 3).kind, 'rules[3].kind: must be a string, got nothing'],
  ['a rule with no name', (f) => delete rule(f, 0).name, 'rules[0].name: is required'],
  ['a blank rule name', (f) => (rule(f, 2).name = '  '), 'rules[2].name: must not be empty'],
  ['two rules with one name', (f) => (rule(f, 1).name = 'amount under $50'), 'rules[1].name: "amount under $50" is defined twice'],
  ['a zero amount', (f) => (rule(f, 0).amount = { usd: 0 }), 'rules[0].amount.usd: must be a positive whole number in the smallest currency unit (cents for USD, whole yen for JPY), got 0'],
  ['a fractional amount', (f) => (rule(f, 0).amount = { usd: 50.5 }), 'rules[0].amount.usd: must be a positive whole number in the smallest currency unit'],
  ['an amount as a string', (f) => (rule(f, 0).amount = { jpy: '7000' }), 'rules[0].amount.jpy: must be a positive whole number in the smallest currency unit (cents for USD, whole yen for JPY), got "7000"'],
  ['an amount over the refund maximum', (f) => (rule(f, 0).amount = { usd: 100_000_000 }), 'rules[0].amount.usd: must be at most 99999999 in the smallest currency unit'],
  ['an amount naming no currency', (f) => (rule(f, 0).amount = 5_000), 'rules[0].amount: must name its currency, e.g. `{usd: 5000}`'],
  ['an amount naming no currency at all', (f) => (rule(f, 0).amount = {}), 'rules[0].amount: must name at least one currency'],
  ['a currency in capitals', (f) => (rule(f, 0).amount = { USD: 5_000 }), 'rules[0].amount.USD: "USD" is not a currency code: three lowercase letters'],
  ['a currency that is no code', (f) => (rule(f, 0).amount = { dollars: 5_000 }), 'rules[0].amount.dollars: "dollars" is not a currency code'],
  ['a key the rule kind does not take', (f) => (rule(f, 2).amount = { usd: 10 }), 'rules[2].amount: unknown key (expected one of name, kind)'],
  // Written before thresholds named their currency: refused with the line to write instead.
  ['a rule in cents', (f) => {
    delete rule(f, 0).amount;
    rule(f, 0).cents = 5_000;
  }, 'rules[0].cents: `cents` names no currency: write `amount: {usd: 5000}` instead (an amount per currency, each in its smallest unit: cents for USD, whole yen for JPY; a refund in a currency it does not name goes to a person)'],
  ['a route condition in cents', (f) => (route(f, 2).when = { amount_over_cents: 20_000 }), 'routes[2].when.amount_over_cents: `amount_over_cents` names no currency: write `amount_over: {usd: 20000}` instead'],
  ['an at-least condition in cents', (f) => (route(f, 2).when = { amount_at_least_cents: 100 }), 'routes[2].when.amount_at_least_cents: `amount_at_least_cents` names no currency: write `amount_at_least: {usd: 100}` instead'],
  ['an at-most condition in cents', (f) => (route(f, 2).when = { amount_at_most_cents: 200.5 }), 'routes[2].when.amount_at_most_cents: `amount_at_most_cents` names no currency: write `amount_at_most: {usd: <amount>}` instead'],
  ['no_flags with no flags', (f) => (rule(f, 1).flags = []), 'rules[1].flags: must not be empty'],
  ['no_flags with a repeated flag', (f) => (rule(f, 1).flags = ['vip', 'vip']), 'rules[1].flags[1]: "vip" appears twice'],
  ['an empty routes list', (f) => (f.routes = []), 'routes: must not be empty'],
  ['a chain naming an undefined group', (f) => (route(f, 2).chain = ['controler']), 'routes[2].chain[0]: group "controler" is not defined in groups'],
  ['an empty chain', (f) => (route(f, 0).chain = []), 'routes[0].chain: must not be empty'],
  ['a group twice in a chain', (f) => (route(f, 2).chain = ['controller', 'controller']), 'routes[2].chain[1]: "controller" appears twice'],
  ['two routes with one name', (f) => (route(f, 1).name = 'flagged'), 'routes[1].name: "flagged" is defined twice'],
  ['a zero SLA', (f) => (route(f, 2).sla_minutes = 0), 'routes[2].sla_minutes: must be a positive whole number of minutes, got 0'],
  ['a negative SLA', (f) => (route(f, 3).sla_minutes = -5), 'routes[3].sla_minutes: must be a positive whole number of minutes, got -5'],
  ['a last route with a when', (f) => (route(f, 3).when = { amount_at_most: { usd: 100 } }), 'routes[3].when: the last route must have no `when`'],
  ['a catch-all before the last route', (f) => delete route(f, 1).when, 'routes[1]: has no `when`, so it matches everything'],
  ['an empty when', (f) => (route(f, 0).when = {}), 'routes[0].when: must give at least one condition'],
  ['an unknown condition', (f) => (route(f, 2).when = { amount_above: { usd: 20_000 } }), 'routes[2].when.amount_above: unknown key (expected one of amount_over,'],
  ['an amount condition naming no currency', (f) => (route(f, 2).when = { amount_over: 20_000 }), 'routes[2].when.amount_over: must name its currency, e.g. `{usd: 20000}`'],
  ['an amount condition in dollars', (f) => (route(f, 2).when = { amount_over: { usd: 200.5 } }), 'routes[2].when.amount_over.usd: must be a positive whole number in the smallest currency unit'],
  ['an unknown reason code', (f) => (route(f, 1).when = { reason_in: ['ambiguous', 'crashed'] }), 'routes[1].when.reason_in[1]: "crashed" is not a reason code'],
  ['a reason_in that is not a list', (f) => (route(f, 1).when = { reason_in: 'ambiguous' }), 'routes[1].when.reason_in: must be a list, got "ambiguous"'],
  ['an undefined failed rule', (f) => (route(f, 0).when = { rules_failed_any: ['amount under 50'] }), 'routes[0].when.rules_failed_any[0]: rule "amount under 50" is not defined in rules'],
  ['an empty flags_any', (f) => (route(f, 0).when = { flags_any: [] }), 'routes[0].when.flags_any: must not be empty'],
  ['a group member not in people', (f) => (f.groups.risk = ['rity']), 'groups.risk[0]: person "rity" is not defined in people'],
  ['a finance person in a group', (f) => (f.groups['ap-leads'] = ['ana', 'fin']), 'groups.ap-leads[1]: person "fin" has role finance; only approvers may be in groups'],
  ['an empty group', (f) => (f.groups.risk = []), 'groups.risk: must not be empty'],
  ['a member twice in a group', (f) => (f.groups.risk = ['rita', 'rita']), 'groups.risk[1]: "rita" appears twice'],
  ['an invalid group name', (f) => (f.groups['Risk Team'] = ['rita']), 'groups."Risk Team": "Risk Team" is not a valid name'],
  ['two people with one name', (f) => (person(f, 1).name = 'ana'), 'people[1].name: "ana" is defined twice'],
  ['a person name with capitals', (f) => (person(f, 0).name = 'Ana'), 'people[0].name: "Ana" is not a valid name'],
  ['a person name over 64 characters', (f) => (person(f, 0).name = 'a'.repeat(65)), 'people[0].name: "aaaa'],
  ['a person named policy', (f) => (person(f, 5).name = 'policy'), 'people[5].name: "policy" is reserved'],
  ['an unknown role', (f) => (person(f, 0).role = 'admin'), 'people[0].role: "admin" is not a role (expected one of approver, finance)'],
  ['a person with no display name', (f) => delete person(f, 2).display_name, 'people[2].display_name: is required'],
  ['an unknown person key', (f) => (person(f, 0).mail = 'ana@example.com'), 'people[0].mail: unknown key'],
  ['a person email with a display name', (f) => (person(f, 0).email = 'Ana <ana@example.com>'), 'people[0].email: "Ana <ana@example.com>" is not a plain email address'],
  ['two approvers from an amount naming no currency', (f) => (route(f, 0).two_approvers_from = 100000), 'routes[0].two_approvers_from: must name its currency'],
  ['two approvers on a chain with a group of one', (f) => (route(f, 0).two_approvers_from = { usd: 100000 }), 'routes[0].chain[0]: group "risk" has fewer than two members, and two_approvers_from needs two distinct approvers'],
  ['a plaintext password', (f) => (person(f, 0).password = 'interlock-demo'), 'people[0].password: must be a scrypt hash "scrypt$N$r$p$salt$hash"'],
  ['a weak scrypt cost', (f) => (person(f, 0).password = weakHash()), 'people[0].password: scrypt cost N=1024 r=8 is weaker than the minimum N=16384 r=8'],
  ['an uppercase token hash', (f) => (f.agents[0]!.token_sha256 = DEMO_TOKEN_SHA256.toUpperCase()), 'agents[0].token_sha256: must be 64 lowercase hex characters'],
  ['a short token hash', (f) => (f.agents[0]!.token_sha256 = DEMO_TOKEN_SHA256.slice(1)), 'agents[0].token_sha256: must be 64 lowercase hex characters'],
  ['two agents with one name', (f) => f.agents.push({ name: 'support-bot', token_sha256: 'a'.repeat(64) }), 'agents[1].name: "support-bot" is defined twice'],
  ['two agents on one token', (f) => f.agents.push({ name: 'other-bot', token_sha256: DEMO_TOKEN_SHA256 }), 'agents[1].token_sha256: is the same token as agent "support-bot"'],
  ['an agent named policy', (f) => (f.agents[0]!.name = 'policy'), 'agents[0].name: "policy" is reserved'],
  ['a Stripe mode of its own', (f) => (f.stripe = { mode: 'prod' }), 'stripe.mode: "prod" is not a Stripe mode (expected one of sandbox, test, live)'],
  ['a Stripe section with no mode', (f) => (f.stripe = {}), 'stripe.mode: is required'],
  ['a Stripe key in the file', (f) => (f.stripe = { mode: 'test', secret_key: 'sk_test_x' }), 'stripe.secret_key: unknown key (expected one of mode, rate_limits)'],
  ['a zero idle timeout', (f) => (f.sessions = { idle_minutes: 0 }), 'sessions.idle_minutes: must be a positive whole number of minutes, got 0'],
  ['an absolute limit under the idle timeout', (f) => (f.sessions = { idle_minutes: 60, absolute_minutes: 30 }), 'sessions.absolute_minutes: an idle timeout of 60 minutes is longer than the absolute limit of 30'],
  ['an idle timeout over the default absolute limit', (f) => (f.sessions = { idle_minutes: 1000 }), 'sessions.idle_minutes: an idle timeout of 1000 minutes'],
  ['test_mode as a string', (f) => (f.test_mode = 'yes'), 'test_mode: must be true or false, got "yes"'],
];

/** A well-formed scrypt hash at N=1024: valid to verify, too weak for the config. */
function weakHash(): string {
  return `scrypt$1024$8$1$${Buffer.alloc(16, 1).toString('base64')}$${Buffer.alloc(32, 2).toString('base64')}`;
}

describe('validation names the bad field', () => {
  it.each(BAD_FIELDS)('refuses %s', (_what, mutate, expected) => {
    const file = buildFileConfig();
    mutate(file);
    expect(configError(() => parseFileConfig(file)).message).toContain(`interlock.yaml: ${expected}`);
  });

  it('never echoes a mistyped password in the error', () => {
    const file = buildFileConfig();
    person(file, 0).password = 'hunter2-secret';
    expect(configError(() => parseFileConfig(file)).message).not.toContain('hunter2-secret');
  });

  const BAD_TEXT: [string, string, string][] = [
    ['an empty file', '', 'interlock.yaml: (top level): must be a mapping, got nothing'],
    ['a list at the top', '- a\n- b\n', 'interlock.yaml: (top level): must be a mapping, got a list'],
    ['a YAML syntax error, by line and column', 'rules: [\n  { name: x\n', 'interlock.yaml: line '],
    ['a duplicate key', 'rules: []\nrules: []\n', 'interlock.yaml: line 2, column 1: YAML syntax: Map keys must be unique'],
    ['two documents', 'rules: []\n---\nroutes: []\n', 'interlock.yaml: line 2, column 1: YAML syntax: the file must hold one document'],
  ];

  it.each(BAD_TEXT)('refuses %s', (_what, text, expected) => {
    expect(configError(() => parseConfig(text, 'interlock.yaml')).message).toContain(expected);
  });

  it('reads YAML 1.1 words like `no` as strings, so test_mode: no is refused rather than guessed', () => {
    const text = `${stringify(buildFileConfig())}test_mode: no\n`;
    expect(configError(() => parseConfig(text, 'interlock.yaml')).message).toBe('interlock.yaml: test_mode: must be true or false, got "no"');
  });

  it('refuses a file over the size limit before parsing it', () => {
    expect(configError(() => parseConfig(`# ${'x'.repeat(1024 * 1024)}\n`, 'interlock.yaml')).message).toBe(
      'interlock.yaml: (file): is larger than 1048576 bytes',
    );
  });

  it('refuses an alias bomb', () => {
    const text = ['a: &a [x, x, x, x, x, x, x, x, x, x]', 'b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]', 'c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]'].join('\n');
    expect(configError(() => parseConfig(text, 'interlock.yaml')).message).toContain('interlock.yaml: (yaml): cannot be read');
  });
});
