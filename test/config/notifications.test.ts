import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { ConfigError, DEFAULT_CONFIG_PATH, loadConfig, parseConfig } from '../../server/config/load.ts';
import type { ConfigEnv } from '../../server/config/notifications.ts';
import { buildFileConfig, type FileConfig } from './support.ts';

const ENV: ConfigEnv = {
  SMTP_PASSWORD: 'smtp-password',
  ANA_SLACK_URL: 'https://hooks.slack.example/services/T0/B0/secretpath',
  AP_LEADS_SLACK_URL: 'https://hooks.slack.example/services/T0/B1/otherpath',
  ANA_HOOK_SECRET: 'ana-hook-secret-0123456789',
  SUPPORT_BOT_CALLBACK_SECRET: 'support-bot-callback-secret-0123',
};

const dir = mkdtempSync(join(tmpdir(), 'interlock-notify-'));
const secretFile = join(dir, 'callback-secret');
writeFileSync(secretFile, '  file-callback-secret-0123456789\n');

/** The notifications page's sample: SMTP, a person with every channel, a group's Slack channel, an agent's callback. */
function buildNotifyConfig(): FileConfig {
  const file = buildFileConfig();
  file.public_url = 'https://interlock.example.com/';
  file.notifications = {
    reminder_at_share: 0.75,
    smtp: { host: 'smtp.example.com', port: 587, secure: false, user: 'interlock', password_env: 'SMTP_PASSWORD', from: 'Interlock <interlock@example.com>' },
    groups: { 'ap-leads': [{ slack: { url_env: 'AP_LEADS_SLACK_URL' } }] },
    callback_allow_private: ['127.0.0.1', 'LocalHost', '[::1]'],
  };
  file.people[0]!.notify = [
    { email: 'ana@example.com' },
    { slack: { url_env: 'ANA_SLACK_URL' } },
    { webhook: { url: 'https://hooks.example/x', secret_env: 'ANA_HOOK_SECRET' } },
  ];
  file.agents[0]!.callback_url = 'https://agent.example/interlock';
  file.agents[0]!.callback_secret_env = 'SUPPORT_BOT_CALLBACK_SECRET';
  return file;
}

function parse(file: unknown, env: ConfigEnv = ENV) {
  return parseConfig(stringify(file), 'interlock.yaml', env);
}

const SAMPLE_START = /^(notify|callback_url|callback_secret_env|public_url|notifications):/;

/** interlock.yaml with its commented-out sample keys (and the lines indented under them) uncommented. */
function uncommentSample(text: string): string {
  let inSample = false;
  return text
    .split('\n')
    .flatMap((line) => {
      const match = /^(\s*)# (.*)$/.exec(line);
      const body = match?.[2] ?? '';
      if (match === null || !(SAMPLE_START.test(body) || (inSample && body.startsWith('  ')))) {
        inSample = false;
        return [line];
      }
      inSample = inSample || /^(notify|notifications):/.test(body);
      return body.trim().startsWith('#') ? [] : [`${match[1]}${body}`];
    })
    .join('\n');
}

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

describe('notifications config', () => {
  it('reads every channel, with secrets from the environment and never from the file', () => {
    const { notifications } = parse(buildNotifyConfig());
    expect(notifications).toEqual({
      publicUrl: 'https://interlock.example.com',
      reminderAtShare: 0.75,
      smtp: { host: 'smtp.example.com', port: 587, secure: false, user: 'interlock', password: 'smtp-password', from: 'Interlock <interlock@example.com>' },
      people: {
        ana: [
          { kind: 'email', to: 'ana@example.com' },
          { kind: 'slack', url: ENV.ANA_SLACK_URL },
          { kind: 'webhook', url: 'https://hooks.example/x', secret: ENV.ANA_HOOK_SECRET },
        ],
      },
      groups: { 'ap-leads': [{ kind: 'slack', url: ENV.AP_LEADS_SLACK_URL }] },
      agents: { 'support-bot': { url: 'https://agent.example/interlock', secret: ENV.SUPPORT_BOT_CALLBACK_SECRET } },
      callbackAllowPrivate: ['127.0.0.1', 'localhost', '::1'],
    });
  });

  it('is empty when the file has no notifications, and the demo interlock.yaml starts with no variable set', () => {
    const empty = { publicUrl: null, reminderAtShare: null, smtp: null, people: {}, groups: {}, agents: {}, callbackAllowPrivate: [] };
    expect(parse(buildFileConfig(), {}).notifications).toEqual(empty);
    expect(loadConfig(DEFAULT_CONFIG_PATH, {}).notifications).toEqual(empty);
  });

  it('loads the commented-out sample in interlock.yaml once it is uncommented, so the sample cannot drift', () => {
    const text = uncommentSample(readFileSync(DEFAULT_CONFIG_PATH, 'utf8'));
    const { notifications } = parseConfig(text, 'interlock.yaml', ENV);
    expect(notifications.publicUrl).toBe('https://interlock.example.com');
    expect(notifications.smtp?.password).toBe(ENV.SMTP_PASSWORD);
    expect(notifications.people.ana?.map((channel) => channel.kind)).toEqual(['email', 'slack', 'webhook']);
    expect(notifications.groups['ap-leads']).toEqual([{ kind: 'slack', url: ENV.AP_LEADS_SLACK_URL }]);
    expect(notifications.agents['support-bot']).toEqual({ url: 'https://agent.example/interlock', secret: ENV.SUPPORT_BOT_CALLBACK_SECRET });
    expect(notifications.callbackAllowPrivate).toEqual(['127.0.0.1', 'localhost']);
  });

  it('reads a secret from a file, trimmed', () => {
    const file = buildNotifyConfig();
    delete file.agents[0]!.callback_secret_env;
    file.agents[0]!.callback_secret_file = secretFile;
    expect(parse(file).notifications.agents['support-bot']?.secret).toBe('file-callback-secret-0123456789');
  });

  it('defaults the SMTP port from secure (465 over TLS, else 587) and takes SMTP with no login', () => {
    const file = buildNotifyConfig();
    file.notifications = { smtp: { host: 'smtp.example.com', secure: true, from: 'interlock@example.com' } };
    delete file.people[0]!.notify;
    expect(parse(file).notifications.smtp).toEqual({ host: 'smtp.example.com', port: 465, secure: true, user: null, password: null, from: 'interlock@example.com' });
    file.notifications = { smtp: { host: 'smtp.example.com', from: 'interlock@example.com' } };
    expect(parse(file).notifications.smtp).toMatchObject({ port: 587, secure: false });
  });

  it('takes http URLs only under test_mode: true', () => {
    const file = buildNotifyConfig();
    file.test_mode = true;
    file.public_url = 'http://127.0.0.1:3000';
    file.agents[0]!.callback_url = 'http://127.0.0.1:4000/cb';
    const { notifications } = parse(file, { ...ENV, ANA_SLACK_URL: 'http://127.0.0.1:5000/slack' });
    expect(notifications.publicUrl).toBe('http://127.0.0.1:3000');
    expect(notifications.agents['support-bot']?.url).toBe('http://127.0.0.1:4000/cb');
    expect(notifications.people.ana?.[1]).toEqual({ kind: 'slack', url: 'http://127.0.0.1:5000/slack' });
  });

  it('never echoes a secret in an error: a Slack URL in the environment that is not https is named by its variable', () => {
    const error = configError(() => parse(buildNotifyConfig(), { ...ENV, ANA_SLACK_URL: 'http://hooks.slack.example/services/T0/B0/secretpath' }));
    expect(error.message).toBe('interlock.yaml: people[0].notify[1].slack.url_env: the URL in the environment variable ANA_SLACK_URL must be https (http only with test_mode: true), not http');
    expect(error.message).not.toContain('secretpath');
  });
});

type Mutation = (file: FileConfig) => void;
const notify = (f: FileConfig, i: number) => (f.people[0]!.notify as Record<string, unknown>[])[i]!;
const section = (f: FileConfig) => f.notifications as Record<string, unknown>;
const smtp = (f: FileConfig) => section(f).smtp as Record<string, unknown>;
const agent = (f: FileConfig) => f.agents[0]!;

// Each row breaks one thing in the sample; the message must name the exact field.
const BAD_FIELDS: [string, Mutation, string][] = [
  ['a Slack URL variable that is not set', (f) => (notify(f, 1).slack = { url_env: 'NOT_SET_URL' }), 'people[0].notify[1].slack.url_env: the environment variable NOT_SET_URL is not set'],
  ['a Slack URL written in the file', (f) => (notify(f, 1).slack = { url: 'https://hooks.slack.example/x' }), 'people[0].notify[1].slack.url: secrets are never written in the file: name an environment variable with url_env or a file with url_file'],
  ['a Slack channel with no URL', (f) => (notify(f, 1).slack = {}), 'people[0].notify[1].slack.url_env: is required (or url_file)'],
  ['a Slack URL from both a variable and a file', (f) => (notify(f, 1).slack = { url_env: 'ANA_SLACK_URL', url_file: secretFile }), 'people[0].notify[1].slack.url_file: give url_env or url_file, not both'],
  ['a variable name that is not one', (f) => (notify(f, 1).slack = { url_env: 'ANA-SLACK' }), 'people[0].notify[1].slack.url_env: "ANA-SLACK" is not an environment variable name'],
  ['a secret file that is missing', (f) => (notify(f, 1).slack = { url_file: '/nonexistent/slack-url' }), 'people[0].notify[1].slack.url_file: the file /nonexistent/slack-url cannot be read (ENOENT)'],
  ['a secret file that is a folder', (f) => (notify(f, 1).slack = { url_file: dir }), `people[0].notify[1].slack.url_file: the file ${dir} is not a regular file`],
  ['a webhook secret written in the file', (f) => (notify(f, 2).webhook = { url: 'https://hooks.example/x', secret: 'hunter2hunter2hunter2' }), 'people[0].notify[2].webhook.secret: secrets are never written in the file'],
  ['a webhook with no secret', (f) => (notify(f, 2).webhook = { url: 'https://hooks.example/x' }), 'people[0].notify[2].webhook.secret_env: is required (or secret_file)'],
  ['a webhook with no URL', (f) => (notify(f, 2).webhook = { secret_env: 'ANA_HOOK_SECRET' }), 'people[0].notify[2].webhook.url: is required'],
  ['a webhook over http', (f) => ((notify(f, 2).webhook as Record<string, unknown>).url = 'http://hooks.example/x'), 'people[0].notify[2].webhook.url: "http://hooks.example/x" must be https (http only with test_mode: true), not http'],
  ['a webhook URL that is not a URL', (f) => ((notify(f, 2).webhook as Record<string, unknown>).url = 'hooks.example/x'), 'people[0].notify[2].webhook.url: "hooks.example/x" is not a URL'],
  ['a webhook URL with credentials', (f) => ((notify(f, 2).webhook as Record<string, unknown>).url = 'https://u:p@hooks.example/x'), 'people[0].notify[2].webhook.url: "https://…@hooks.example/x" must not carry credentials'],
  ['a short webhook secret', (f) => ((notify(f, 2).webhook as Record<string, unknown>).secret_env = 'SMTP_PASSWORD'), 'people[0].notify[2].webhook.secret_env: the secret in the environment variable SMTP_PASSWORD is shorter than 16 characters'],
  ['an email address with a display name', (f) => (notify(f, 0).email = 'Ana <ana@example.com>'), 'people[0].notify[0].email: "Ana <ana@example.com>" is not a plain email address like ana@example.com (no display name)'],
  ['an email address with no domain', (f) => (notify(f, 0).email = 'ana@localhost'), 'people[0].notify[0].email: "ana@localhost" is not a plain email address'],
  ['an email channel without SMTP', (f) => delete section(f).smtp, 'people[0].notify[0].email: email needs notifications.smtp, which is not configured'],
  ['a channel of no known kind', (f) => (notify(f, 0).sms = '+15550100'), 'people[0].notify[0].sms: unknown key (expected one of email, slack, webhook)'],
  ['a channel of two kinds', (f) => (notify(f, 0).slack = { url_env: 'ANA_SLACK_URL' }), 'people[0].notify[0]: must have exactly one of email, slack, webhook'],
  ['a channel of no kind', (f) => (f.people[0]!.notify = [{}]), 'people[0].notify[0]: must have exactly one of email, slack, webhook'],
  ['notify that is not a list', (f) => (f.people[0]!.notify = { email: 'ana@example.com' }), 'people[0].notify: must be a list, got a mapping'],
  ['an SMTP password in the file', (f) => (smtp(f).password = 'hunter2'), 'notifications.smtp.password: secrets are never written in the file: name an environment variable with password_env or a file with password_file'],
  ['an SMTP password variable that is not set', (f) => (smtp(f).password_env = 'NOPE'), 'notifications.smtp.password_env: the environment variable NOPE is not set'],
  ['an SMTP user with no password', (f) => delete smtp(f).password_env, 'notifications.smtp.password_env: is required when user is given (or password_file)'],
  ['an SMTP password with no user', (f) => delete smtp(f).user, 'notifications.smtp.user: is required when a password is given'],
  ['an SMTP section with no host', (f) => delete smtp(f).host, 'notifications.smtp.host: is required'],
  ['an SMTP port out of range', (f) => (smtp(f).port = 70_000), 'notifications.smtp.port: must be a whole number from 1 to 65535, got 70000'],
  ['SMTP secure as a string', (f) => (smtp(f).secure = 'yes'), 'notifications.smtp.secure: must be true or false, got "yes"'],
  ['an SMTP From that is no address', (f) => (smtp(f).from = 'Interlock'), 'notifications.smtp.from: "Interlock" is not a plain email address'],
  ['an unknown SMTP key', (f) => (smtp(f).tls = true), 'notifications.smtp.tls: unknown key (expected one of host, port,'],
  ['an unknown notifications key', (f) => (section(f).slack = {}), 'notifications.slack: unknown key (expected one of reminder_at_share, smtp, groups, callback_allow_private)'],
  ['a reminder share of 1', (f) => (section(f).reminder_at_share = 1), 'notifications.reminder_at_share: must be a number between 0 and 1, exclusive'],
  ['a reminder share of 0', (f) => (section(f).reminder_at_share = 0), 'notifications.reminder_at_share: must be a number between 0 and 1, exclusive'],
  ['channels for a group that does not exist', (f) => (section(f).groups = { 'ap-lead': [{ email: 'a@example.com' }] }), 'notifications.groups.ap-lead: group "ap-lead" is not defined in groups'],
  ['a group with no channels', (f) => (section(f).groups = { 'ap-leads': [] }), 'notifications.groups.ap-leads: must not be empty'],
  ['a group Slack URL variable not set', (f) => (section(f).groups = { risk: [{ slack: { url_env: 'RISK_SLACK_URL' } }] }), 'notifications.groups.risk[0].slack.url_env: the environment variable RISK_SLACK_URL is not set'],
  ['an allow-list that is not a list', (f) => (section(f).callback_allow_private = 'localhost'), 'notifications.callback_allow_private: must be a list, got "localhost"'],
  ['an allow-list entry that is not a host', (f) => (section(f).callback_allow_private = ['10.0.0.0/8']), 'notifications.callback_allow_private[0]: "10.0.0.0/8" is not a host name or IP address'],
  ['an allow-list entry twice', (f) => (section(f).callback_allow_private = ['localhost', 'LOCALHOST']), 'notifications.callback_allow_private[1]: "localhost" appears twice'],
  ['a public URL over http', (f) => (f.public_url = 'http://interlock.example.com'), 'public_url: "http://interlock.example.com" must be https (http only with test_mode: true), not http'],
  ['a public URL with a query', (f) => (f.public_url = 'https://interlock.example.com/?x=1'), 'public_url: must have no query or fragment'],
  ['a callback secret in the file', (f) => (agent(f).callback_secret = 'a-secret-in-the-file'), 'agents[0].callback_secret: secrets are never written in the file: name an environment variable with callback_secret_env or a file with callback_secret_file'],
  ['a callback with no secret', (f) => delete agent(f).callback_secret_env, 'agents[0].callback_secret_env: is required with callback_url (or callback_secret_file): callbacks are always signed'],
  ['a callback secret with no URL', (f) => delete agent(f).callback_url, 'agents[0].callback_url: is required when a callback secret is given'],
  ['a callback secret variable not set', (f) => (agent(f).callback_secret_env = 'BOT_SECRET'), 'agents[0].callback_secret_env: the environment variable BOT_SECRET is not set'],
  ['a callback over http', (f) => (agent(f).callback_url = 'http://agent.example/interlock'), 'agents[0].callback_url: "http://agent.example/interlock" must be https (http only with test_mode: true), not http'],
  ['a callback to another scheme', (f) => (agent(f).callback_url = 'ftp://agent.example/x'), 'agents[0].callback_url: "ftp://agent.example/x" must be https (http only with test_mode: true), not ftp'],
  ['a callback URL with credentials', (f) => (agent(f).callback_url = 'https://bot:pw@agent.example/interlock'), 'agents[0].callback_url: "https://…@agent.example/interlock" must not carry credentials'],
  ['a short callback secret', (f) => (agent(f).callback_secret_env = 'SMTP_PASSWORD'), 'agents[0].callback_secret_env: the secret in the environment variable SMTP_PASSWORD is shorter than 16 characters'],
  ['an unknown agent key', (f) => (agent(f).callback = 'https://agent.example'), 'agents[0].callback: unknown key (expected one of name, token_sha256, callback_url,'],
];

describe('notifications validation names the bad field', () => {
  it.each(BAD_FIELDS)('refuses %s', (_what, mutate, expected) => {
    const file = buildNotifyConfig();
    mutate(file);
    expect(configError(() => parse(file)).message).toContain(`interlock.yaml: ${expected}`);
  });

  // Every field the config reads as a URL or a host, set to one carrying a password or a query
  // token, each way it can be refused: for credentials, for its scheme, for not being a URL.
  const SECRET = 'Hunter2sekrit';
  const URL_FIELDS: [string, (f: FileConfig, value: string) => void][] = [
    ['agents[0].callback_url', (f, value) => (agent(f).callback_url = value)],
    ['people[0].notify[2].webhook.url', (f, value) => ((notify(f, 2).webhook as Record<string, unknown>).url = value)],
    ['public_url', (f, value) => (f.public_url = value)],
  ];
  // Short, so that no cut of a long value hides what a message would echo.
  const SECRET_URLS = [
    `https://bot:${SECRET}@agent.example/interlock`,
    `https://bot:${SECRET}@a.example/?t=${SECRET}`,
    `http://a.example/?t=${SECRET}`,
    `ftp://bot:${SECRET}@a.example/x`,
    `https://bot:${SECRET}@`,
    `gopher://a.example/x#${SECRET}`,
    `https://a.example:99999/?t=${SECRET}`,
  ];
  it.each(URL_FIELDS.flatMap(([field, set]) => SECRET_URLS.map((url) => [field, url, set] as const)))(
    'a refused %s never echoes its password or query: %s',
    (field, url, set) => {
      const file = buildNotifyConfig();
      set(file, url);
      const { message } = configError(() => parse(file));
      expect(message.startsWith(`interlock.yaml: ${field}: `), message).toBe(true);
      expect(message.toLowerCase()).not.toContain(SECRET.toLowerCase());
    },
  );

  it.each([
    ['notifications.smtp.host', (f: FileConfig) => (smtp(f).host = `interlock:${SECRET}@smtp.example.com`)],
    ['notifications.smtp.host', (f: FileConfig) => (smtp(f).host = `smtps://interlock:${SECRET}@smtp.example.com`)],
    ['notifications.callback_allow_private[0]', (f: FileConfig) => (section(f).callback_allow_private = [`bot:${SECRET}@127.0.0.1`])],
  ])('a refused host in %s never echoes a password written into it', (field, mutate) => {
    const file = buildNotifyConfig();
    mutate(file);
    const { message } = configError(() => parse(file));
    expect(message.startsWith(`interlock.yaml: ${field}: `), message).toBe(true);
    expect(message.toLowerCase()).not.toContain(SECRET.toLowerCase());
  });

  it('never echoes a secret written in the file', () => {
    const file = buildNotifyConfig();
    smtp(file).password = 'hunter2-in-the-file';
    expect(configError(() => parse(file)).message).not.toContain('hunter2');
  });
});
