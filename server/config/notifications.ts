import type { AgentCallbackConfig, ChannelConfig, NotificationsConfig, SmtpConfig } from '../outbox/types.ts';
import { type Checker, describeHost, describeUrl, describeValue, keyPath, type Mapping } from './check.ts';
import { type AgentConfig, configLimits, type PersonConfig } from './schema.ts';
import { readSecretFile } from './secret-file.ts';

/** The environment secrets are read from: the process environment as main.ts hands it over (server/config/env.ts `secrets`), a test's own map in tests. */
export type ConfigEnv = Readonly<Record<string, string | undefined>>;

/** Keys of a person entry that this module reads (readPeople lets them through). */
export const PERSON_NOTIFY_KEYS = ['notify'] as const;

/**
 * Keys of an agent entry that this module reads (readAgents lets them through). `callback_secret`
 * is listed only so that a secret written into the file is refused by name, with the way to fix it.
 */
export const AGENT_CALLBACK_KEYS = ['callback_url', 'callback_secret_env', 'callback_secret_file', 'callback_secret'] as const;

/** What readConfig has already read, and what the channels depend on. */
export interface NotificationSections {
  people: readonly PersonConfig[];
  agents: readonly AgentConfig[];
  groups: Readonly<Record<string, string[]>>;
  testMode: boolean;
}

const SECTION_KEYS = ['reminder_at_share', 'smtp', 'groups', 'callback_allow_private'] as const;
const SMTP_KEYS = ['host', 'port', 'secure', 'user', 'password_env', 'password_file', 'password', 'from'] as const;
const CHANNEL_KEYS = ['email', 'slack', 'webhook'] as const;

/** SMTP submission with STARTTLS, and SMTP over TLS from the first byte. */
const SMTP_PORT = { starttls: 587, tls: 465 } as const;

// A plain address: no display name, no comments, no quoting; a dotted domain. Deliberately
// narrower than RFC 5322: what it refuses is a typo far more often than a real mailbox.
/** A plain email address, no display name. */
export const EMAIL = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+$/;
/** `Display Name <address>`, the one place a display name is allowed (the From header). */
const NAMED_ADDRESS = /^([^<>"\r\n]*?)\s*<([^<>\s]+)>$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const HOST = /^[A-Za-z0-9.:[\]-]{1,253}$/;

/** A secret as read, with where it came from, so messages can name the source and never the value. */
interface Secret {
  value: string;
  field: string;
  origin: string;
}

/** Field readers for this section, bound to the file, the environment and test mode. */
export class NotificationsReader {
  constructor(
    readonly c: Checker,
    readonly env: ConfigEnv,
    readonly testMode: boolean,
    readonly smtp: SmtpConfig | null,
  ) {}

  /** A secret from `<base>_env` or `<base>_file`; never from `<base>` itself. */
  secret(raw: Mapping, path: string, base: string): Secret {
    const secret = this.optionalSecret(raw, path, base);
    if (secret === null) this.c.fail(keyPath(path, `${base}_env`), `is required (or ${base}_file): the secret comes from an environment variable or a file`);
    return secret;
  }

  /** As `secret`, but null when neither `<base>_env` nor `<base>_file` is given. */
  optionalSecret(raw: Mapping, path: string, base: string): Secret | null {
    const envKey = `${base}_env`;
    const fileKey = `${base}_file`;
    if (Object.hasOwn(raw, base)) {
      this.c.fail(keyPath(path, base), `secrets are never written in the file: name an environment variable with ${envKey} or a file with ${fileKey}`);
    }
    const hasEnv = raw[envKey] !== undefined;
    const hasFile = raw[fileKey] !== undefined;
    if (hasEnv && hasFile) this.c.fail(keyPath(path, fileKey), `give ${envKey} or ${fileKey}, not both`);
    if (hasEnv) return this.fromEnv(raw[envKey], keyPath(path, envKey));
    if (hasFile) return this.fromFile(raw[fileKey], keyPath(path, fileKey));
    return null;
  }

  private fromEnv(value: unknown, field: string): Secret {
    const name = this.c.string(value, field);
    if (!ENV_NAME.test(name)) this.c.fail(field, `${describeValue(name)} is not an environment variable name`);
    const text = this.env[name]?.trim() ?? '';
    if (text === '') this.c.fail(field, `the environment variable ${name} is not set`);
    return { value: text, field, origin: `the environment variable ${name}` };
  }

  private fromFile(value: unknown, field: string): Secret {
    const file = this.c.string(value, field);
    if (file.trim() === '') this.c.fail(field, 'must not be empty');
    const text = readSecretFile(file, (problem) => this.c.fail(field, `the file ${file} ${problem}`)).trim();
    if (text === '') this.c.fail(field, `the file ${file} is empty`);
    return { value: text, field, origin: `the file ${file}` };
  }

  /**
   * A URL Interlock sends to or links to: https, or http under test_mode; no credentials in it.
   * A refusal never echoes a secret: a secret URL is named by where it came from, any other is
   * shown without its credentials, query and fragment (describeUrl).
   */
  url(text: string, field: string, secretOrigin: string | null): string {
    const shown = secretOrigin === null ? describeUrl(text) : `the URL in ${secretOrigin}`;
    if (text.length > configLimits.urlCharsMax) this.c.fail(field, `${shown} is longer than ${configLimits.urlCharsMax} characters`);
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      return this.c.fail(field, `${shown} is not a URL`);
    }
    const allowed = url.protocol === 'https:' || (url.protocol === 'http:' && this.testMode);
    if (!allowed) this.c.fail(field, `${shown} must be https (http only with test_mode: true), not ${url.protocol.replace(':', '')}`);
    if (url.username !== '' || url.password !== '') this.c.fail(field, `${shown} must not carry credentials (user:password@)`);
    return url.href;
  }

  /** A secret long enough to sign with: a short one can be guessed offline from one signed message. */
  signingSecret(secret: Secret): string {
    const min = configLimits.signingSecretCharsMin;
    if (secret.value.length < min) this.c.fail(secret.field, `the secret in ${secret.origin} is shorter than ${min} characters`);
    return secret.value;
  }

  email(value: unknown, path: string): string {
    const text = this.c.string(value, path);
    if (text.length > configLimits.emailCharsMax || !EMAIL.test(text)) {
      this.c.fail(path, `${describeValue(text)} is not a plain email address like ana@example.com (no display name)`);
    }
    return text;
  }

  /** One `{ email }`, `{ slack }` or `{ webhook }` item of a `notify` or group list. */
  channel(value: unknown, path: string): ChannelConfig {
    const raw = this.c.mapping(value, path, CHANNEL_KEYS);
    const [kind, ...others] = Object.keys(raw);
    if (kind === undefined || others.length > 0) this.c.fail(path, `must have exactly one of ${CHANNEL_KEYS.join(', ')}`);
    const at = keyPath(path, kind);
    if (kind === 'email') {
      if (this.smtp === null) this.c.fail(at, 'email needs notifications.smtp, which is not configured');
      return { kind: 'email', to: this.email(raw.email, at) };
    }
    if (kind === 'slack') {
      const slack = this.c.mapping(raw.slack, at, ['url_env', 'url_file', 'url']);
      const secret = this.secret(slack, at, 'url');
      return { kind: 'slack', url: this.url(secret.value, secret.field, secret.origin) };
    }
    const webhook = this.c.mapping(raw.webhook, at, ['url', 'secret_env', 'secret_file', 'secret'], ['url']);
    const url = this.url(this.c.string(webhook.url, `${at}.url`), `${at}.url`, null);
    return { kind: 'webhook', url, secret: this.signingSecret(this.secret(webhook, at, 'secret')) };
  }

  channels(value: unknown, path: string, options: { nonEmpty?: boolean } = {}): ChannelConfig[] {
    return this.c.list(value, path, options).map((item, i) => this.channel(item, `${path}[${i}]`));
  }
}


/**
 * `public_url`, `notifications`, each person's `notify` and each agent's callback: everything
 * about reaching people and agents. `top` is the file's top-level mapping; people and agents are
 * read again here by index, after readPeople and readAgents have checked their shape.
 */
export function readNotifications(c: Checker, top: Mapping, sections: NotificationSections, env: ConfigEnv): NotificationsConfig {
  const raw: Mapping = top.notifications === undefined || top.notifications === null ? {} : c.mapping(top.notifications, 'notifications', SECTION_KEYS);
  const probe = new NotificationsReader(c, env, sections.testMode, null);
  const smtp = raw.smtp === undefined ? null : readSmtp(probe, raw.smtp);
  const reader = new NotificationsReader(c, env, sections.testMode, smtp);
  return {
    publicUrl: top.public_url === undefined || top.public_url === null ? null : readPublicUrl(reader, top.public_url),
    reminderAtShare: raw.reminder_at_share === undefined || raw.reminder_at_share === null ? null : readShare(c, raw.reminder_at_share),
    smtp,
    people: readPeopleChannels(reader, top.people, sections.people),
    groups: readGroupChannels(reader, raw.groups, sections.groups),
    agents: readAgentCallbacks(reader, top.agents, sections.agents),
    callbackAllowPrivate: raw.callback_allow_private === undefined ? [] : readAllowPrivate(c, raw.callback_allow_private),
  };
}

function readPublicUrl(reader: NotificationsReader, value: unknown): string {
  const field = 'public_url';
  const href = reader.url(reader.c.string(value, field), field, null);
  const url = new URL(href);
  if (url.search !== '' || url.hash !== '') reader.c.fail(field, 'must have no query or fragment: item links are <public_url>/items/<effect_id>');
  return href.replace(/\/+$/, '');
}

function readShare(c: Checker, value: unknown): number {
  const path = 'notifications.reminder_at_share';
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value >= 1) {
    c.fail(path, `must be a number between 0 and 1, exclusive (0.75: a reminder when three quarters of the SLA have passed), got ${describeValue(value)}`);
  }
  return value;
}

function readSmtp(reader: NotificationsReader, value: unknown): SmtpConfig {
  const c: Checker = reader.c;
  const path = 'notifications.smtp';
  const raw = c.mapping(value, path, SMTP_KEYS, ['host', 'from']);
  const host = c.string(raw.host, `${path}.host`);
  if (!HOST.test(host)) c.fail(`${path}.host`, `${describeHost(host)} is not a host name or IP address`);
  const secure = raw.secure === undefined ? raw.port === SMTP_PORT.tls : c.boolean(raw.secure, `${path}.secure`);
  const port = raw.port === undefined ? (secure ? SMTP_PORT.tls : SMTP_PORT.starttls) : readPort(c, raw.port, `${path}.port`);
  const user = raw.user === undefined || raw.user === null ? null : c.label(raw.user, `${path}.user`);
  const password = reader.optionalSecret(raw, path, 'password');
  if (password !== null && user === null) c.fail(`${path}.user`, 'is required when a password is given');
  if (password === null && user !== null) c.fail(`${path}.password_env`, 'is required when user is given (or password_file)');
  return { host, port, secure, user, password: password?.value ?? null, from: readFrom(reader, raw.from, `${path}.from`) };
}

function readPort(c: Checker, value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > 65_535) {
    c.fail(path, `must be a whole number from 1 to 65535, got ${describeValue(value)}`);
  }
  return value;
}

/** The From header: an address, or `Display Name <address>`. */
function readFrom(reader: NotificationsReader, value: unknown, path: string): string {
  const text = reader.c.string(value, path).trim();
  const named = NAMED_ADDRESS.exec(text);
  reader.email(named === null ? text : named[2], path);
  return text;
}

function readPeopleChannels(reader: NotificationsReader, rawPeople: unknown, people: readonly PersonConfig[]): Record<string, ChannelConfig[]> {
  const channels: Record<string, ChannelConfig[]> = {};
  const list = reader.c.list(rawPeople, 'people');
  people.forEach((person, i) => {
    const raw = reader.c.object(list[i], `people[${i}]`);
    if (raw.notify !== undefined) channels[person.name] = reader.channels(raw.notify, `people[${i}].notify`);
  });
  return channels;
}

function readGroupChannels(reader: NotificationsReader, value: unknown, groups: Readonly<Record<string, string[]>>): Record<string, ChannelConfig[]> {
  const channels: Record<string, ChannelConfig[]> = {};
  if (value === undefined || value === null) return channels;
  for (const [group, list] of reader.c.entries(value, 'notifications.groups')) {
    const path = keyPath('notifications.groups', group);
    if (!Object.hasOwn(groups, group)) reader.c.fail(path, `group "${group}" is not defined in groups`);
    channels[group] = reader.channels(list, path, { nonEmpty: true });
  }
  return channels;
}

function readAgentCallbacks(reader: NotificationsReader, rawAgents: unknown, agents: readonly AgentConfig[]): Record<string, AgentCallbackConfig> {
  const c: Checker = reader.c;
  const callbacks: Record<string, AgentCallbackConfig> = {};
  const list = c.list(rawAgents, 'agents');
  agents.forEach((agent, i) => {
    const path = `agents[${i}]`;
    const raw = c.object(list[i], path);
    // Read the secret first: a literal callback_secret is refused even when callback_url is missing.
    const secret = reader.optionalSecret(raw, path, 'callback_secret');
    if (raw.callback_url === undefined) {
      if (secret !== null) c.fail(`${path}.callback_url`, 'is required when a callback secret is given');
      return;
    }
    const url = reader.url(c.string(raw.callback_url, `${path}.callback_url`), `${path}.callback_url`, null);
    if (secret === null) c.fail(`${path}.callback_secret_env`, 'is required with callback_url (or callback_secret_file): callbacks are always signed');
    callbacks[agent.name] = { url, secret: reader.signingSecret(secret) };
  });
  return callbacks;
}

/** Hosts and IP addresses, lowercased, IPv6 without brackets, as the address guard compares them. */
function readAllowPrivate(c: Checker, value: unknown): string[] {
  return c.distinct(value, 'notifications.callback_allow_private', (item, path) => {
    const host = c.string(item, path).trim().toLowerCase().replace(/^\[(.*)\]$/, '$1');
    if (!HOST.test(host)) c.fail(path, `${describeHost(host)} is not a host name or IP address`);
    return host;
  });
}
