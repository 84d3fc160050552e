import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { LineCounter, parseDocument } from 'yaml';
import { POLICY } from '../gate/leases.ts';
import { Checker, ConfigError, type Mapping } from './check.ts';
import { readIntegrity } from './integrity.ts';
import { type ConfigEnv, NotificationsReader, readNotifications } from './notifications.ts';
import { CONFIG_DEFAULTS, configLimits, type InterlockConfig, STRIPE_MODES, type StripeConfig } from './schema.ts';
import { readMetrics } from './metrics.ts';
import { readNetwork, readThrottle } from './network.ts';
import { refusePublishedSecrets } from './published-secrets.ts';
import { readAgents, readGroups, readPeople, readRoutes, readRules } from './sections.ts';

export { ConfigError } from './check.ts';

/** The file `npm start` reads when `INTERLOCK_CONFIG` is not set. */
export const DEFAULT_CONFIG_PATH = fileURLToPath(new URL('../../interlock.yaml', import.meta.url));

const TOP_KEYS = [
  'inbox_name',
  'approval_max_age_minutes',
  'sla_tick_seconds',
  'rules',
  'routes',
  'groups',
  'people',
  'agents',
  'stripe',
  'sessions',
  'test_mode',
  'public_url',
  'notifications',
  'reject_reasons',
  'integrity',
  'trust_proxy',
  'allowed_hosts',
  'throttle',
  'metrics',
] as const;

/**
 * Keys with no default. An absent approval window must not silently mean "approvals never
 * expire", and absent rules must not silently mean "everything clears with no person": both
 * are written out, as `null` or `[]`, when that is what is meant.
 */
const TOP_REQUIRED = ['approval_max_age_minutes', 'rules', 'routes', 'groups', 'people', 'agents', 'stripe'] as const;

/**
 * Read and validate a config from YAML (or JSON) text; `source` names the file in every error.
 * Secrets the file names by `*_env` are read from `env`.
 */
export function parseConfig(text: string, source: string, env: ConfigEnv = {}): InterlockConfig {
  const c = new Checker(source);
  if (Buffer.byteLength(text, 'utf8') > configLimits.fileBytesMax) c.fail('(file)', `is larger than ${configLimits.fileBytesMax} bytes`);
  return readConfig(c, readYaml(c, text), env);
}

/** Load the config from `path` (server/config/env.ts reads `INTERLOCK_CONFIG`), else `interlock.yaml` at the project root. */
export function loadConfig(path?: string, env: ConfigEnv = {}): InterlockConfig {
  return loadConfigFile(path, env).config;
}

/** A config as loaded, with the SHA-256 of the file's bytes: what the journal names a reloaded config by. */
export interface LoadedConfig {
  config: InterlockConfig;
  sha256: string;
}

/** `loadConfig`, with the file's SHA-256: the same reads and checks at start and at every reload. */
export function loadConfigFile(path?: string, env: ConfigEnv = {}): LoadedConfig {
  const file = path ?? DEFAULT_CONFIG_PATH;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const reason = error instanceof Error && 'code' in error && typeof error.code === 'string' ? error.code : String(error);
    throw new ConfigError(file, '(file)', `cannot be read (${reason}); set INTERLOCK_CONFIG to the config file's path`);
  }
  return { config: parseConfig(text, file, env), sha256: createHash('sha256').update(text, 'utf8').digest('hex') };
}

function readYaml(c: Checker, text: string): unknown {
  // YAML 1.2's core schema: `no` stays a string, duplicate keys are errors, no merge keys.
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { version: '1.2', schema: 'core', uniqueKeys: true, merge: false, prettyErrors: false, lineCounter });
  const [error] = doc.errors;
  if (error !== undefined) {
    const { line, col } = lineCounter.linePos(error.pos[0]);
    const problem = error.code === 'MULTIPLE_DOCS' ? 'the file must hold one document, not several' : error.message.split('\n')[0];
    c.fail(`line ${line}, column ${col}`, `YAML syntax: ${problem}`);
  }
  try {
    return doc.toJS({ maxAliasCount: configLimits.aliasCountMax });
  } catch (error) {
    return c.fail('(yaml)', `cannot be read: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function readConfig(c: Checker, value: unknown, env: ConfigEnv): InterlockConfig {
  const top = c.mapping(value, '', TOP_KEYS, TOP_REQUIRED);
  const people = readPeople(c, top.people);
  const agents = readAgents(c, top.agents);
  const groups = readGroups(c, top.groups, people);
  const rules = readRules(c, top.rules);
  const testMode = top.test_mode === undefined ? CONFIG_DEFAULTS.testMode : c.boolean(top.test_mode, 'test_mode');
  const config: InterlockConfig = {
    inboxName: readInboxName(c, top.inbox_name),
    approvalMaxAgeMs: top.approval_max_age_minutes === null ? null : c.minutesAsMs(top.approval_max_age_minutes, 'approval_max_age_minutes'),
    slaTickMs: readTickMs(c, top.sla_tick_seconds),
    rules,
    routes: readRoutes(c, top.routes, groups, rules),
    groups,
    people,
    agents,
    stripe: readStripe(c, top.stripe),
    sessions: readSessions(c, top.sessions),
    notifications: readNotifications(c, top, { people, agents, groups, testMode }, env),
    integrity: readIntegrity(c, top.integrity, new NotificationsReader(c, env, testMode, null)),
    rejectReasons: readRejectReasons(c, top.reject_reasons),
    network: readNetwork(c, top),
    throttle: readThrottle(c, top.throttle),
    metrics: readMetrics(c, top.metrics),
    testMode,
  };
  // Last, so a file with mistakes is told of those first: this one is about where it runs.
  refusePublishedSecrets(c, config.stripe.mode, people, agents);
  return config;
}

/** Quick reasons an approver picks with one click when rejecting: short, distinct, at most 20. */
function readRejectReasons(c: Checker, value: unknown): string[] {
  if (value === undefined) return [];
  const reasons = c.list(value, 'reject_reasons').map((item, i) => c.label(item, `reject_reasons[${i}]`));
  if (reasons.length > REJECT_REASONS_MAX) c.fail('reject_reasons', `at most ${REJECT_REASONS_MAX} quick reasons`);
  reasons.forEach((reason, i) => {
    if (reasons.indexOf(reason) !== i) c.fail(`reject_reasons[${i}]`, `"${reason}" appears twice`);
  });
  return reasons;
}

/** Quick reasons are a short list to pick from, not a catalogue. */
const REJECT_REASONS_MAX = 20;

function readInboxName(c: Checker, value: unknown): string {
  if (value === undefined) return CONFIG_DEFAULTS.inboxName;
  const name = c.name(value, 'inbox_name');
  if (name === POLICY) c.fail('inbox_name', `"${POLICY}" is reserved for decisions made by the rules`);
  return name;
}

function readTickMs(c: Checker, value: unknown): number {
  if (value === undefined) return CONFIG_DEFAULTS.slaTickSeconds * 1000;
  const max = configLimits.tickSecondsMax;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0 || value > max) {
    c.fail('sla_tick_seconds', `must be a whole number of seconds from 1 to ${max}, got ${String(value)}`);
  }
  return value * 1000;
}

function readStripe(c: Checker, value: unknown): StripeConfig {
  const raw = c.mapping(value, 'stripe', ['mode', 'rate_limits'], ['mode']);
  const mode = c.oneOf(raw.mode, 'stripe.mode', STRIPE_MODES, 'a Stripe mode');
  const limits: Mapping = raw.rate_limits === undefined ? {} : c.mapping(raw.rate_limits, 'stripe.rate_limits', ['share', 'global_per_second', 'endpoint_per_second']);
  const share = limits.share ?? CONFIG_DEFAULTS.stripeBudgetShare;
  if (typeof share !== 'number' || !(share > 0 && share <= 1)) {
    c.fail('stripe.rate_limits.share', `must be a share of Stripe's limits above 0 and at most 1, got ${String(share)}`);
  }
  const perSecond = (field: 'global_per_second' | 'endpoint_per_second'): number | null => {
    const given = limits[field];
    if (given === undefined || given === null) return null;
    if (typeof given !== 'number' || !Number.isSafeInteger(given) || given < 1 || given > configLimits.stripeOpsPerSecondMax) {
      c.fail(`stripe.rate_limits.${field}`, `must be a whole number of operations a second from 1 to ${configLimits.stripeOpsPerSecondMax}, got ${String(given)}`);
    }
    return given;
  };
  return { mode, rateLimits: { share: Number(share), globalPerSecond: perSecond('global_per_second'), endpointPerSecond: perSecond('endpoint_per_second') } };
}

function readSessions(c: Checker, value: unknown): { idleMs: number; absoluteMs: number } {
  const raw: Mapping = value === undefined ? {} : c.mapping(value, 'sessions', ['idle_minutes', 'absolute_minutes']);
  const idleMs =
    raw.idle_minutes === undefined ? CONFIG_DEFAULTS.sessionIdleMinutes * 60_000 : c.minutesAsMs(raw.idle_minutes, 'sessions.idle_minutes');
  const absoluteMs =
    raw.absolute_minutes === undefined
      ? CONFIG_DEFAULTS.sessionAbsoluteMinutes * 60_000
      : c.minutesAsMs(raw.absolute_minutes, 'sessions.absolute_minutes');
  if (absoluteMs < idleMs) {
    // Name the key the operator wrote: a defaulted one is not in the file to be fixed.
    const field = raw.absolute_minutes === undefined ? 'sessions.idle_minutes' : 'sessions.absolute_minutes';
    c.fail(field, `an idle timeout of ${idleMs / 60_000} minutes is longer than the absolute limit of ${absoluteMs / 60_000}`);
  }
  return { idleMs, absoluteMs };
}
