import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EnvError, parseEnv } from '../../server/config/env.ts';
import { freePort, runServerToExit } from '../support/server-process.ts';

// The Stripe keys come from their variable, from a file named by `<variable>_FILE`, or from a
// systemd credential (LoadCredential=stripe-secret-key:<path>), as the receipt key may; real
// files in a folder of the test's own.

const dir = mkdtempSync(join(tmpdir(), 'interlock-stripe-keys-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
function file(text: string): string {
  n += 1;
  const path = join(dir, `key-${n}`);
  writeFileSync(path, text, { mode: 0o600 });
  return path;
}

function credentials(files: Record<string, string>): string {
  n += 1;
  const path = join(dir, `credentials-${n}`);
  mkdirSync(path);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(path, name), text);
  return path;
}

function refusal(env: Record<string, string>): string {
  try {
    parseEnv(env);
  } catch (error) {
    expect(error).toBeInstanceOf(EnvError);
    return (error as Error).message;
  }
  throw new Error(`parseEnv accepted ${JSON.stringify(env)}`);
}

describe('the Stripe keys from files', () => {
  it('STRIPE_SECRET_KEY_FILE and STRIPE_LIVE_KEY_FILE are read, the line end trimmed', () => {
    const env = parseEnv({ STRIPE_SECRET_KEY_FILE: file('sk_test_fromfile\n'), STRIPE_LIVE_KEY_FILE: file('rk_live_fromfile\n') });
    expect([env.stripeSecretKey, env.stripeLiveKey]).toEqual(['sk_test_fromfile', 'rk_live_fromfile']);
  });

  it('systemd credentials stripe-secret-key and stripe-live-key are read when no variable names a key', () => {
    const CREDENTIALS_DIRECTORY = credentials({ 'stripe-secret-key': 'sk_test_credential\n', 'stripe-live-key': 'rk_live_credential' });
    const env = parseEnv({ CREDENTIALS_DIRECTORY });
    expect([env.stripeSecretKey, env.stripeLiveKey]).toEqual(['sk_test_credential', 'rk_live_credential']);
    // A variable says where the key is, as RECEIPT_KEY_PATH does: it wins over the credential.
    expect(parseEnv({ CREDENTIALS_DIRECTORY, STRIPE_SECRET_KEY: 'sk_test_variable' }).stripeSecretKey).toBe('sk_test_variable');
    expect(parseEnv({ CREDENTIALS_DIRECTORY, STRIPE_LIVE_KEY_FILE: file('rk_live_file') }).stripeLiveKey).toBe('rk_live_file');
    // No credential of that name: no key, as before.
    expect(parseEnv({ CREDENTIALS_DIRECTORY: credentials({}) }).stripeSecretKey).toBeNull();
  });

  it('the variable and its file together are refused, naming both', () => {
    expect(refusal({ STRIPE_SECRET_KEY: 'sk_test_a', STRIPE_SECRET_KEY_FILE: file('sk_test_b') })).toBe('STRIPE_SECRET_KEY and STRIPE_SECRET_KEY_FILE are both set: give one of them');
    expect(refusal({ STRIPE_LIVE_KEY: 'rk_live_a', STRIPE_LIVE_KEY_FILE: file('rk_live_b') })).toBe('STRIPE_LIVE_KEY and STRIPE_LIVE_KEY_FILE are both set: give one of them');
  });

  it('a missing, unreadable or empty file is refused naming the variable and the file', () => {
    const missing = join(dir, 'nothing-here');
    expect(refusal({ STRIPE_SECRET_KEY_FILE: missing })).toBe(`STRIPE_SECRET_KEY_FILE names ${missing}, which cannot be read (ENOENT)`);
    const notADirectory = `${file('sk_test_x')}/key`;
    expect(refusal({ STRIPE_LIVE_KEY_FILE: notADirectory })).toBe(`STRIPE_LIVE_KEY_FILE names ${notADirectory}, which cannot be read (ENOTDIR)`);
    expect(refusal({ STRIPE_LIVE_KEY_FILE: dir })).toBe(`STRIPE_LIVE_KEY_FILE names ${dir}, which is not a regular file`);
    const empty = file(' \n');
    expect(refusal({ STRIPE_SECRET_KEY_FILE: empty })).toBe(`STRIPE_SECRET_KEY_FILE names ${empty}, which is empty`);
    const CREDENTIALS_DIRECTORY = credentials({ 'stripe-live-key': '' });
    expect(refusal({ CREDENTIALS_DIRECTORY })).toBe(`the systemd credential ${join(CREDENTIALS_DIRECTORY, 'stripe-live-key')} (CREDENTIALS_DIRECTORY) is empty`);
  });

  it('a file name with a character a terminal does not show (an env file saved with CRLF) is shown quoted', () => {
    const key = file('sk_test_x');
    expect(refusal({ STRIPE_SECRET_KEY_FILE: `${key}\r` })).toBe(`STRIPE_SECRET_KEY_FILE names ${JSON.stringify(`${key}\r`)}, which cannot be read (ENOENT)`);
    expect(refusal({ STRIPE_LIVE_KEY_FILE: `${key} ` })).toBe(`STRIPE_LIVE_KEY_FILE names ${JSON.stringify(`${key} `)}, which cannot be read (ENOENT)`);
  });

  it('a key of the wrong kind in a file is refused naming the variable, never echoing the key', () => {
    const message = refusal({ STRIPE_SECRET_KEY_FILE: file('sk_live_secret123\n'), STRIPE_LIVE_KEY_FILE: file('sk_live_secret456') });
    expect(message).toMatch(/^STRIPE_SECRET_KEY_FILE must be a Stripe test-mode key \(sk_test_\.\.\. or rk_test_\.\.\.\)/);
    expect(message).toContain('; STRIPE_LIVE_KEY_FILE is a full live secret key (sk_live_...)');
    expect(message).not.toMatch(/secret123|secret456/);
  });

  it('the server does not start on a key file it cannot read, and says which variable', async () => {
    const missing = join(dir, 'no-key');
    const { exit, stderr } = await runServerToExit({ STRIPE_SECRET_KEY_FILE: missing });
    expect(exit).toBe('2');
    expect(stderr.trim()).toBe(`Interlock did not start: STRIPE_SECRET_KEY_FILE names ${missing}, which cannot be read (ENOENT)`);
  }, 30_000);

  it('the server does not start on a sandbox URL nobody answers at, and says which variable, with no stack', async () => {
    const nobody = `http://127.0.0.1:${await freePort()}`;
    const { exit, stderr } = await runServerToExit({ STRIPE_SANDBOX_URL: nobody });
    expect(exit).toBe('2');
    expect(stderr.trim()).toMatch(/^Interlock did not start: STRIPE_SANDBOX_URL names the Stripe sandbox at http:\/\/127\.0\.0\.1:\d+, which cannot be reached \(.*ECONNREFUSED.*\): start it there first, or unset STRIPE_SANDBOX_URL/);
    expect(stderr).not.toContain('    at ');
  }, 30_000);
});
