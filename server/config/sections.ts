import { ROLES } from '../../shared/api.ts';
import { assertNever } from '../../shared/statuses.ts';
import { POLICY } from '../gate/leases.ts';
import { toolCommand } from '../tools.ts';
import { type Checker, keyPath } from './check.ts';
import { AGENT_CALLBACK_KEYS, EMAIL, PERSON_NOTIFY_KEYS } from './notifications.ts';
import {
  type AgentConfig,
  configLimits,
  type PersonConfig,
  REASON_CODES,
  RULE_KINDS,
  type RouteConfig,
  type RouteWhen,
  type RuleConfig,
  type RuleKind,
  THRESHOLD_KEYS_REPLACED,
  WHEN_KEYS,
} from './schema.ts';
import { isSha256Hex, parsePasswordHash, SCRYPT_DEFAULTS } from './secrets.ts';


/** A name no person or agent may have: decisions by the rules are recorded as `policy`. */
function ownName(c: Checker, value: unknown, path: string): string {
  const name = c.name(value, path);
  if (name === POLICY) c.fail(path, `"${POLICY}" is reserved for decisions made by the rules`);
  return name;
}

function uniqueName(c: Checker, seen: Set<string>, name: string, path: string): void {
  if (seen.has(name)) c.fail(path, `"${name}" is defined twice`);
  seen.add(name);
}

/** `people`: who logs in, with a scrypt password hash each; `notify` is read by readNotifications. */
export function readPeople(c: Checker, value: unknown): PersonConfig[] {
  const seen = new Set<string>();
  return c.list(value, 'people').map((item, i) => {
    const path = `people[${i}]`;
    const raw = c.mapping(item, path, ['name', 'display_name', 'role', 'password', 'email', ...PERSON_NOTIFY_KEYS], ['name', 'display_name', 'role', 'password']);
    const name = ownName(c, raw.name, `${path}.name`);
    uniqueName(c, seen, name, `${path}.name`);
    const role = c.oneOf(raw.role, `${path}.role`, ROLES, 'a role');
    return {
      name,
      displayName: c.label(raw.display_name, `${path}.display_name`),
      role,
      passwordHash: readPasswordHash(c, raw.password, `${path}.password`),
      email: raw.email === undefined ? null : readPersonEmail(c, raw.email, `${path}.email`),
    };
  });
}

/** A person's own email address: a payment whose customer has it is theirs, and they may not approve its refund. */
function readPersonEmail(c: Checker, value: unknown, path: string): string {
  const text = c.string(value, path).trim();
  if (text.length > configLimits.emailCharsMax || !EMAIL.test(text)) c.fail(path, `${JSON.stringify(text)} is not a plain email address like ana@example.com (no display name)`);
  return text;
}

/** The value is never echoed: a plaintext password pasted by mistake must not land in a log. */
function readPasswordHash(c: Checker, value: unknown, path: string): string {
  const parsed = parsePasswordHash(value);
  if (parsed === null || typeof value !== 'string') c.fail(path, `must be a scrypt hash "scrypt$N$r$p$salt$hash" (make one with \`${toolCommand('hash-secret', 'password <password>')}\`)`);
  if (parsed.cost < SCRYPT_DEFAULTS.cost || parsed.blockSize < SCRYPT_DEFAULTS.blockSize) {
    c.fail(path, `scrypt cost N=${parsed.cost} r=${parsed.blockSize} is weaker than the minimum N=${SCRYPT_DEFAULTS.cost} r=${SCRYPT_DEFAULTS.blockSize}`);
  }
  return value;
}

/** `agents`: who asks for refunds, by the SHA-256 of a bearer token; the callback keys are read by readNotifications. */
export function readAgents(c: Checker, value: unknown): AgentConfig[] {
  const names = new Set<string>();
  const tokens = new Map<string, string>();
  return c.list(value, 'agents').map((item, i) => {
    const path = `agents[${i}]`;
    const raw = c.mapping(item, path, ['name', 'token_sha256', ...AGENT_CALLBACK_KEYS], ['name', 'token_sha256']);
    const name = ownName(c, raw.name, `${path}.name`);
    uniqueName(c, names, name, `${path}.name`);
    const tokenSha256 = raw.token_sha256;
    if (!isSha256Hex(tokenSha256)) {
      c.fail(`${path}.token_sha256`, `must be 64 lowercase hex characters, the SHA-256 of the token (make one with \`${toolCommand('hash-secret', 'token <token>')}\`)`);
    }
    // Two agents on one token could not be told apart, so one would act as the other.
    const other = tokens.get(tokenSha256);
    if (other !== undefined) c.fail(`${path}.token_sha256`, `is the same token as agent "${other}"`);
    tokens.set(tokenSha256, name);
    return { name, tokenSha256 };
  });
}

/** `groups`: name → members, each an approver in `people`. */
export function readGroups(c: Checker, value: unknown, people: readonly PersonConfig[]): Record<string, string[]> {
  const groups: Record<string, string[]> = {};
  for (const [group, members] of c.entries(value, 'groups')) {
    const path = keyPath('groups', group);
    c.name(group, path);
    groups[group] = c.distinct(
      members,
      path,
      (member, memberPath) => {
        const name = c.string(member, memberPath);
        const person = people.find((p) => p.name === name);
        if (person === undefined) c.fail(memberPath, `person "${name}" is not defined in people`);
        if (person.role !== 'approver') c.fail(memberPath, `person "${name}" has role ${person.role}; only approvers may be in groups`);
        return name;
      },
      { nonEmpty: true },
    );
  }
  return groups;
}

const RULE_KEYS: Record<RuleKind, readonly string[]> = {
  amount_at_most: ['name', 'kind', 'amount'],
  no_flags: ['name', 'kind', 'flags'],
  not_disputed: ['name', 'kind'],
  fits_remaining: ['name', 'kind'],
};

/** `rules`: every one must pass for a refund to clear with no person. */
export function readRules(c: Checker, value: unknown): RuleConfig[] {
  const seen = new Set<string>();
  return c.list(value, 'rules').map((item, i): RuleConfig => {
    const path = `rules[${i}]`;
    const given = c.object(item, path);
    const kind = c.oneOf(given.kind, `${path}.kind`, RULE_KINDS, 'a rule kind');
    if (kind === 'amount_at_most' && Object.hasOwn(given, 'cents')) c.fail(`${path}.cents`, thresholdWithoutCurrency('cents', 'amount', given.cents));
    const raw = c.mapping(item, path, RULE_KEYS[kind], RULE_KEYS[kind]);
    const name = c.label(raw.name, `${path}.name`);
    uniqueName(c, seen, name, `${path}.name`);
    switch (kind) {
      case 'amount_at_most':
        return { kind, name, amount: c.amounts(raw.amount, `${path}.amount`) };
      case 'no_flags':
        return { kind, name, flags: c.distinct(raw.flags, `${path}.flags`, (f, p) => c.flag(f, p), { nonEmpty: true }) };
      case 'not_disputed':
      case 'fits_remaining':
        return { kind, name };
      default:
        return assertNever(kind);
    }
  });
}

/** `routes`: first match wins; only the last has no `when`, so every item has a route. */
export function readRoutes(c: Checker, value: unknown, groups: Record<string, string[]>, rules: readonly RuleConfig[]): RouteConfig[] {
  const seen = new Set<string>();
  const items = c.list(value, 'routes', { nonEmpty: true });
  return items.map((item, i) => {
    const path = `routes[${i}]`;
    const raw = c.mapping(item, path, ['name', 'when', 'chain', 'sla_minutes', 'two_approvers_from'], ['name', 'chain']);
    const name = c.name(raw.name, `${path}.name`);
    uniqueName(c, seen, name, `${path}.name`);
    const when = Object.hasOwn(raw, 'when') ? readWhen(c, raw.when, `${path}.when`, rules) : null;
    const last = i === items.length - 1;
    if (last && when !== null) c.fail(`${path}.when`, 'the last route must have no `when`, so that every item has a route');
    if (!last && when === null) c.fail(path, 'has no `when`, so it matches everything; only the last route may, or the routes after it could never match');
    const chain = c.distinct(
      raw.chain,
      `${path}.chain`,
      (group, groupPath) => {
        const groupName = c.string(group, groupPath);
        if (!Object.hasOwn(groups, groupName)) c.fail(groupPath, `group "${groupName}" is not defined in groups`);
        return groupName;
      },
      { nonEmpty: true },
    );
    const sla = raw.sla_minutes;
    const slaMs = sla === undefined || sla === null ? null : c.minutesAsMs(sla, `${path}.sla_minutes`);
    const twoApproversFrom = raw.two_approvers_from === undefined ? null : c.amounts(raw.two_approvers_from, `${path}.two_approvers_from`);
    // Two distinct approvers must be possible at every level the item can reach, or it could never be sent.
    if (twoApproversFrom !== null) {
      for (const [j, group] of chain.entries()) {
        if ((groups[group] ?? []).length < 2) c.fail(`${path}.chain[${j}]`, `group "${group}" has fewer than two members, and two_approvers_from needs two distinct approvers`);
      }
    }
    return { name, when, chain, slaMs, twoApproversFrom };
  });
}

/**
 * The refusal of a threshold that names no currency (cents, as every amount was once written),
 * with the line to write instead: the same amount, in US dollars.
 */
function thresholdWithoutCurrency(key: string, replacement: string, value: unknown): string {
  const amount = typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? String(value) : '<amount>';
  return (
    `\`${key}\` names no currency: write \`${replacement}: {usd: ${amount}}\` instead (an amount per currency, each in its ` +
    'smallest unit: cents for USD, whole yen for JPY; a refund in a currency it does not name goes to a person)'
  );
}

function readWhen(c: Checker, value: unknown, path: string, rules: readonly RuleConfig[]): RouteWhen {
  const given = c.object(value, path);
  for (const [key, replacement] of Object.entries(THRESHOLD_KEYS_REPLACED)) {
    if (Object.hasOwn(given, key)) c.fail(`${path}.${key}`, thresholdWithoutCurrency(key, replacement, given[key]));
  }
  const raw = c.mapping(value, path, WHEN_KEYS);
  if (Object.keys(raw).length === 0) c.fail(path, 'must give at least one condition; leave `when` out for a route that matches everything');
  const when: RouteWhen = {};
  const at = (key: string) => `${path}.${key}`;
  if (raw.amount_over !== undefined) when.amountOver = c.amounts(raw.amount_over, at('amount_over'));
  if (raw.amount_at_least !== undefined) when.amountAtLeast = c.amounts(raw.amount_at_least, at('amount_at_least'));
  if (raw.amount_at_most !== undefined) when.amountAtMost = c.amounts(raw.amount_at_most, at('amount_at_most'));
  if (raw.flags_any !== undefined) when.flagsAny = c.distinct(raw.flags_any, at('flags_any'), (f, p) => c.flag(f, p), { nonEmpty: true });
  if (raw.reason_in !== undefined) {
    when.reasonIn = c.distinct(
      raw.reason_in,
      at('reason_in'),
      (reason, reasonPath) => c.oneOf(reason, reasonPath, REASON_CODES, 'a reason code'),
      { nonEmpty: true },
    );
  }
  if (raw.rules_failed_any !== undefined) {
    when.rulesFailedAny = c.distinct(
      raw.rules_failed_any,
      at('rules_failed_any'),
      (rule, rulePath) => {
        const name = c.string(rule, rulePath);
        if (!rules.some((r) => r.name === name)) c.fail(rulePath, `rule "${name}" is not defined in rules`);
        return name;
      },
      { nonEmpty: true },
    );
  }
  return when;
}
