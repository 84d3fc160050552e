import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG_PATH } from '../../server/config/load.ts';
import { EnvError, parseEnv } from '../../server/config/env.ts';
import { runServerToExit } from '../support/server-process.ts';

// The environment is read once, in server/config/env.ts, into a typed object; a bad value stops the
// server with a message naming the variable, where `Number(env.PORT ?? 3000)` took NaN.

const root = fileURLToPath(new URL('../../', import.meta.url));

function refusal(env: Record<string, string>): string {
  try {
    parseEnv(env);
  } catch (error) {
    expect(error).toBeInstanceOf(EnvError);
    return (error as Error).message;
  }
  throw new Error(`parseEnv accepted ${JSON.stringify(env)}`);
}

describe('parseEnv', () => {
  it('an empty environment is the documented defaults', () => {
    expect(parseEnv({})).toEqual({
      port: 3000,
      host: '127.0.0.1',
      dataDir: resolve('data'),
      dbPath: resolve('data', 'interlock.sqlite'),
      databaseUrl: null,
      databaseMigrateUrl: null,
      databaseListenUrl: null,
      databasePoolMax: null,
      receiptKeyPath: null,
      credentialsDirectory: null,
      sandboxPort: 12_111,
      stripeSecretKey: null,
      stripeWebhookSecrets: [],
      stripeLiveKey: null,
      stripeLiveWebhookSecrets: [],
      stripeSandboxUrl: null,
      configPath: DEFAULT_CONFIG_PATH,
      killAt: [],
      claimTtlMs: null,
      reconcileMs: 60_000,
      sandboxDemo: true,
      sandboxRateLimits: 'test',
      demo: null,
      logLevel: 'info',
      secrets: {},
    });
  });

  it('reads every variable the server uses, and an empty one means its default', () => {
    const env = parseEnv({
      PORT: '0',
      HOST: '0.0.0.0',
      DATA_DIR: '/tmp/interlock-data',
      DB_PATH: 'journal.sqlite',
      RECEIPT_KEY_PATH: 'keys/receipt.pem',
      CREDENTIALS_DIRECTORY: '/run/credentials/interlock.service',
      SANDBOX_PORT: '65535',
      STRIPE_SECRET_KEY: 'sk_test_abc',
      STRIPE_WEBHOOK_SECRETS: 'whsec_one, whsec_two',
      STRIPE_SANDBOX_URL: 'http://127.0.0.1:4000',
      INTERLOCK_CONFIG: '/etc/interlock.yaml',
      INTERLOCK_KILL_AT: 'after_dispatch, after_send',
      INTERLOCK_CLAIM_TTL_MS: '300',
      INTERLOCK_RECONCILE_MS: '500',
      SANDBOX_DEMO: '0',
      SANDBOX_RATE_LIMITS: 'live',
      INTERLOCK_DEMO: '1',
      LOG_LEVEL: 'silent',
    });
    expect(env).toMatchObject({
      port: 0,
      host: '0.0.0.0',
      dataDir: '/tmp/interlock-data',
      dbPath: resolve('journal.sqlite'),
      receiptKeyPath: resolve('keys/receipt.pem'),
      credentialsDirectory: '/run/credentials/interlock.service',
      sandboxPort: 65_535,
      stripeSecretKey: 'sk_test_abc',
      stripeWebhookSecrets: ['whsec_one', 'whsec_two'],
      configPath: '/etc/interlock.yaml',
      killAt: ['after_dispatch', 'after_send'],
      claimTtlMs: 300,
      reconcileMs: 500,
      sandboxDemo: false,
      sandboxRateLimits: 'live',
      demo: true,
      logLevel: 'silent',
    });
    expect(String(env.stripeSandboxUrl)).toBe('http://127.0.0.1:4000/');
    expect(parseEnv({ PORT: '', DATA_DIR: '', INTERLOCK_CONFIG: '' })).toMatchObject({ port: 3000, dataDir: resolve('data'), configPath: DEFAULT_CONFIG_PATH });
  });

  it('INTERLOCK_DEMO: unset (demo traffic wherever the embedded sandbox runs), 1 asks for it, 0 turns it off', () => {
    expect([parseEnv({}).demo, parseEnv({ INTERLOCK_DEMO: '' }).demo, parseEnv({ INTERLOCK_DEMO: '1' }).demo, parseEnv({ INTERLOCK_DEMO: '0' }).demo]).toEqual([null, null, true, false]);
  });

  it.each([
    [{ PORT: 'abc' }, 'PORT must be a whole number from 0 to 65535, not "abc"'],
    [{ PORT: '65536' }, 'PORT must be a whole number from 0 to 65535, not "65536"'],
    [{ PORT: '-1' }, 'PORT must be a whole number from 0 to 65535, not "-1"'],
    [{ PORT: '3000.5' }, 'PORT must be a whole number from 0 to 65535, not "3000.5"'],
    [{ PORT: '0x10' }, 'PORT must be a whole number from 0 to 65535, not "0x10"'],
    [{ SANDBOX_PORT: ' 12111' }, 'SANDBOX_PORT must be a whole number from 0 to 65535, not " 12111"'],
    [{ INTERLOCK_CLAIM_TTL_MS: '0' }, 'INTERLOCK_CLAIM_TTL_MS must be a whole number of ms, 1 or more, not "0"'],
    [{ INTERLOCK_CLAIM_TTL_MS: '2m' }, 'INTERLOCK_CLAIM_TTL_MS must be a whole number of ms, 1 or more, not "2m"'],
    [{ INTERLOCK_RECONCILE_MS: '100' }, 'INTERLOCK_RECONCILE_MS must be a whole number of ms, 500 or more, not "100"'],
    [{ INTERLOCK_KILL_AT: 'after_dispatch,after_lunch' }, 'INTERLOCK_KILL_AT must be kill points separated by commas (before_dispatch, after_dispatch, after_send, after_commit, recovery_resend, outbox_before_attempt, outbox_after_send, outbox_after_record), not "after_dispatch,after_lunch"'],
    [{ STRIPE_SANDBOX_URL: '127.0.0.1:12111' }, 'STRIPE_SANDBOX_URL must be an http:// URL such as http://127.0.0.1:12111, not "127.0.0.1:12111"'],
    [{ STRIPE_SANDBOX_URL: 'https://api.stripe.com' }, 'STRIPE_SANDBOX_URL must be an http:// URL such as http://127.0.0.1:12111, not "https://api.stripe.com"'],
    [{ SANDBOX_DEMO: 'yes' }, 'SANDBOX_DEMO must be one of 0, 1, not "yes"'],
    [{ SANDBOX_RATE_LIMITS: 'fast' }, 'SANDBOX_RATE_LIMITS must be one of off, test, live, not "fast"'],
    [{ INTERLOCK_DEMO: 'off' }, 'INTERLOCK_DEMO must be one of 0, 1, not "off"'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, not "loud"'],
  ])('%o is refused by name: %s', (env, message) => {
    expect(refusal(env)).toBe(message);
  });

  it.each(['https://sandbox:Hunter2sekrit@sandbox.example/', 'ftp://sandbox.example/?key=Hunter2sekrit', 'http://sandbox:Hunter2sekrit@'])(
    'a refused STRIPE_SANDBOX_URL never echoes its password or query: %s',
    (url) => {
      const message = refusal({ STRIPE_SANDBOX_URL: url });
      expect(message.startsWith('STRIPE_SANDBOX_URL must be an http:// URL'), message).toBe(true);
      expect(message).not.toContain('Hunter2sekrit');
    },
  );

  it('names every bad variable at once, and never echoes a secret', () => {
    const message = refusal({ PORT: 'abc', STRIPE_SECRET_KEY: 'sk_live_secret123', STRIPE_WEBHOOK_SECRETS: 'whsec_ok,hunter2' });
    expect(message).toBe(
      'STRIPE_SECRET_KEY must be a Stripe test-mode key (sk_test_... or rk_test_...); a live key goes in STRIPE_LIVE_KEY; ' +
        'STRIPE_WEBHOOK_SECRETS must be whsec_... secrets separated by commas; ' +
        'PORT must be a whole number from 0 to 65535, not "abc"',
    );
    expect(message).not.toMatch(/secret123|hunter2/);
  });
});

describe('the server and its environment', () => {
  it('main.ts prints a bad variable by name and exits 2, as for a bad config', async () => {
    const { exit, stderr } = await runServerToExit({ PORT: 'abc' });
    expect(exit).toBe('2');
    expect(stderr.trim()).toBe('Interlock did not start: PORT must be a whole number from 0 to 65535, not "abc"');
  }, 30_000);

  // main.ts hands the environment to parseEnv and reads nothing of it itself; the sandbox's own
  // program (server/sandbox/main.ts), the MCP server (server/mcp/main.ts, `npm run mcp`) and the
  // audit export (server/export/export-cli.ts, `npm run export`, which hands it to runExportCli)
  // are other processes, with variables of their own; so is `npm run reload` (server/app/reload-cli.ts),
  // which reads the server's own environment through parseEnv to find its data folder, and so is
  // `npm run migrate` (server/app/migrate-cli.ts), `npm run rebuild-views` (server/views/rebuild-cli.ts),
  // and `npm run verify` (server/receipts/verify-cli.ts: DATABASE_URL for --database). server/cli.ts reads how npm started a tool
  // (npm_lifecycle_event), to name that command in the tool's usage.
  it('no server module reads process.env but main.ts, to hand it to parseEnv', () => {
    const sources = (dir: string): string[] =>
      readdirSync(join(root, dir)).flatMap((name) => {
        const path = join(dir, name);
        return statSync(join(root, path)).isDirectory() ? sources(path) : path.endsWith('.ts') ? [path] : [];
      });
    const readers = sources('server').filter((file) => /process\.env\b/.test(readFileSync(join(root, file), 'utf8')));
    expect(readers.sort()).toEqual(['server/app/migrate-cli.ts', 'server/app/reload-cli.ts', 'server/backup/backup-cli.ts', 'server/cli.ts', 'server/export/export-cli.ts', 'server/main.ts', 'server/mcp/main.ts', 'server/receipts/verify-cli.ts', 'server/sandbox/main.ts', 'server/views/rebuild-cli.ts']);
    expect(readFileSync(join(root, 'server/main.ts'), 'utf8').match(/.*process\.env\b.*/g)).toEqual(['  await answerSignals(startInterlock(parseEnv(process.env)));']);
  });
});
