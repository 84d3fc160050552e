import { generateKeyPairSync } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIGNING_KEY_WARNINGS } from '../../server/receipts/key-file.ts';
import { keyIdFor, PUBLIC_KEY_FILE, SIGNING_KEY_FILE } from '../../server/receipts/keys.ts';
import { verifyReceipt } from '../../server/receipts/verify.ts';
import { type Sandbox, startSandbox } from '../../server/sandbox/index.ts';
import { clientFor, freePort, runServerToExit, type ServerProcess, startServerProcess, writeTestConfig } from '../support/server-process.ts';

// `npm start` as an operator runs it with the key kept out of the data folder: RECEIPT_KEY_PATH
// names a read-only key file elsewhere, the server signs with it, publishes its public half in the
// data folder and says nothing about the key; with the key in the data folder it warns, by code.

let root: string;
let sandbox: Sandbox;
const servers: ServerProcess[] = [];

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'interlock-key-server-'));
  sandbox = await startSandbox({ port: 0 });
}, 30_000);

afterAll(async () => {
  for (const server of servers.splice(0)) {
    server.child.kill('SIGTERM');
    await server.exited;
  }
  await sandbox.close();
  rmSync(root, { recursive: true, force: true });
});

/** A fresh data folder and the environment of a server on it, its warnings logged. */
async function serverEnv(name: string, extra: Record<string, string> = {}): Promise<{ dataDir: string; env: Record<string, string> }> {
  const dataDir = join(root, name, 'data');
  mkdirSync(dataDir, { recursive: true });
  const env = {
    PORT: String(await freePort()),
    DATA_DIR: dataDir,
    INTERLOCK_CONFIG: writeTestConfig(join(root, name)),
    STRIPE_SANDBOX_URL: sandbox.url,
    LOG_LEVEL: 'warn',
    CREDENTIALS_DIRECTORY: '',
    ...extra,
  };
  return { dataDir, env };
}

async function start(env: Record<string, string>): Promise<ServerProcess> {
  const server = await startServerProcess(env, { logs: true });
  servers.push(server);
  return server;
}

/** The log lines of a server, parsed. */
function logLines(server: ServerProcess): { level: number; code?: string; msg?: string }[] {
  return server
    .stdout()
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line));
}

/** Pino's level number for warn. */
const WARN = 40;

describe('a real server with the receipt key outside the data folder', () => {
  it('RECEIPT_KEY_PATH, mode 0400: receipts are signed with that key, verify with the published public key, and no key warning is logged', async () => {
    const keyDir = join(root, 'etc-interlock');
    mkdirSync(keyDir);
    const keyPath = join(keyDir, 'receipt-key.pem');
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    writeFileSync(keyPath, privateKey.export({ type: 'pkcs8', format: 'pem' }));
    chmodSync(keyPath, 0o400);
    const { dataDir, env } = await serverEnv('outside', { RECEIPT_KEY_PATH: keyPath });
    const server = await start(env);

    const api = clientFor(server.url);
    const pi = (await sandbox.createPaymentIntent(10_000)).id;
    const posted = await api.agent('POST', '/v1/refunds', { request_id: 'key-outside-1', payment_intent: pi, amount: 1_000 });
    expect(posted.status).toBe(200);
    const receipt = await api.agent('GET', String(posted.body.receipt));
    expect(receipt.status).toBe(200);
    expect(receipt.body).toMatchObject({ v: 2, key_id: keyIdFor(publicKey) });

    // An offline verifier holds what the data folder publishes: the public half of the key named.
    const published = readFileSync(join(dataDir, PUBLIC_KEY_FILE), 'utf8');
    expect(published).toBe(publicKey.export({ type: 'spki', format: 'pem' }).toString());
    expect(await verifyReceipt(receipt.body, published)).toMatchObject({ valid: true, signed: true });
    // Nothing private was written to the data folder, and the key file was left as it was.
    expect(existsSync(join(dataDir, SIGNING_KEY_FILE))).toBe(false);
    expect(readFileSync(keyPath, 'utf8')).toBe(privateKey.export({ type: 'pkcs8', format: 'pem' }));

    const lines = logLines(server);
    expect(lines.filter((line) => SIGNING_KEY_WARNINGS.some((code) => line.code === code))).toEqual([]);
    expect(server.stdout()).not.toContain('receipt_key_');
  }, 60_000);

  it('the data folder key, created at first start: both warnings are logged at warn, each with its code', async () => {
    const { dataDir, env } = await serverEnv('inside');
    const server = await start(env);
    expect(existsSync(join(dataDir, SIGNING_KEY_FILE))).toBe(true);
    const warned = logLines(server).filter((line) => line.level === WARN && typeof line.code === 'string' && line.code.startsWith('receipt_key_'));
    expect(warned.map((line) => line.code)).toEqual(['receipt_key_in_data_dir', 'receipt_key_writable']);
    for (const line of warned) expect(line.msg).toMatch(/RECEIPT_KEY_PATH|chmod 0400/);
  }, 60_000);
});

describe('a real server with a receipt key it cannot use', () => {
  it('RECEIPT_KEY_PATH naming a missing file: one line, exit 2, no stack, nothing created', async () => {
    const keyPath = join(root, 'missing', 'key.pem');
    const { env } = await serverEnv('missing', { RECEIPT_KEY_PATH: keyPath });
    const { exit, stderr } = await runServerToExit(env);
    expect(exit).toBe('2');
    expect(stderr.trim()).toBe(
      `Interlock did not start: RECEIPT_KEY_PATH names ${keyPath}, which does not exist (ENOENT): the server never creates a key there: ` +
        `make one (openssl genpkey -algorithm ed25519 -out ${keyPath}), or unset RECEIPT_KEY_PATH to keep the key in the data folder`,
    );
    expect(existsSync(keyPath)).toBe(false);
  }, 30_000);

  it('RECEIPT_KEY_PATH naming a file that holds no key: one line, exit 2, no stack', async () => {
    const keyPath = join(root, 'not-a-key.pem');
    writeFileSync(keyPath, 'not a key\n');
    const { env } = await serverEnv('invalid', { RECEIPT_KEY_PATH: keyPath });
    const { exit, stderr } = await runServerToExit(env);
    expect(exit).toBe('2');
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^Interlock did not start: RECEIPT_KEY_PATH names ${keyPath}, which is not an unencrypted PEM private key`));
  }, 30_000);
});
