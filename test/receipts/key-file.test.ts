import { generateKeyPairSync } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ExportInputError, readSigningKey } from '../../server/export/read-journal.ts';
import { resolveSigningKey, type SigningKeyEnv, signingKeyLocation, writableByServer } from '../../server/receipts/key-file.ts';
import { keyIdFor, loadOrCreateSigningKey, PUBLIC_KEY_FILE, SIGNING_KEY_FILE, SigningKeyError } from '../../server/receipts/keys.ts';

// The receipt signing key may be kept out of the data folder: whoever can write that folder must
// not be able to read the key. RECEIPT_KEY_PATH names it, or systemd hands it over in
// $CREDENTIALS_DIRECTORY; only the data folder's own key is ever created.

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-key-file-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** An Ed25519 private key written as PKCS#8 PEM with `mode`, as `openssl genpkey -algorithm ed25519` writes one; its key id. */
function writeKey(path: string, mode: number): string {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  writeFileSync(path, privateKey.export({ type: 'pkcs8', format: 'pem' }));
  chmodSync(path, mode);
  return keyIdFor(publicKey);
}

/** A data folder and a folder apart from it, where an operator keeps the key. */
function world(): { dataDir: string; apart: string; env: (over?: Partial<SigningKeyEnv>) => SigningKeyEnv } {
  const dataDir = join(tempDir(), 'data');
  const apart = tempDir();
  return { dataDir, apart, env: (over = {}) => ({ dataDir, receiptKeyPath: null, credentialsDirectory: null, ...over }) };
}

function refusal(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(SigningKeyError);
    return (error as Error).message;
  }
  throw new Error('the key was accepted');
}

describe('key file: where the key is looked for', () => {
  const table: [string, { path: boolean; credential: 'none' | 'empty' | 'with key' }, string][] = [
    ['RECEIPT_KEY_PATH first, even with a credential there', { path: true, credential: 'with key' }, 'receipt_key_path'],
    ['a systemd credential when RECEIPT_KEY_PATH is unset', { path: false, credential: 'with key' }, 'credential'],
    ['the data folder when the credentials directory holds no key', { path: false, credential: 'empty' }, 'data_dir'],
    ['the data folder when neither is set', { path: false, credential: 'none' }, 'data_dir'],
  ];
  it.each(table)('%s', (_name, given, source) => {
    const { apart, env } = world();
    const credentials = join(apart, 'credentials');
    mkdirSync(credentials);
    if (given.credential === 'with key') writeKey(join(credentials, SIGNING_KEY_FILE), 0o400);
    const keyPath = join(apart, 'key.pem');
    const location = signingKeyLocation(env({ receiptKeyPath: given.path ? keyPath : null, credentialsDirectory: given.credential === 'none' ? null : credentials }));
    expect(location.source).toBe(source);
    expect(location.path).toBe({ receipt_key_path: keyPath, credential: join(credentials, SIGNING_KEY_FILE), data_dir: join(env().dataDir, SIGNING_KEY_FILE) }[source]);
  });
});

describe('key file: a key handed over is read, never created', () => {
  it('RECEIPT_KEY_PATH: the key there signs; its public half is written to the data folder, and no private key is', () => {
    const { dataDir, apart, env } = world();
    const keyPath = join(apart, 'key.pem');
    const keyId = writeKey(keyPath, 0o400);
    const resolved = resolveSigningKey(env({ receiptKeyPath: keyPath }));
    expect(resolved).toMatchObject({ source: 'receipt_key_path', path: keyPath, warnings: [] });
    expect(resolved.key.keyId).toBe(keyId);
    expect(readFileSync(join(dataDir, PUBLIC_KEY_FILE), 'utf8')).toBe(resolved.key.publicKeyPem);
    expect(existsSync(join(dataDir, SIGNING_KEY_FILE))).toBe(false);
  });

  it('a systemd credential (LoadCredential=receipt-signing-key.pem:…) is read from $CREDENTIALS_DIRECTORY', () => {
    const { dataDir, apart, env } = world();
    const keyId = writeKey(join(apart, SIGNING_KEY_FILE), 0o400);
    const resolved = resolveSigningKey(env({ credentialsDirectory: apart }));
    expect(resolved).toMatchObject({ source: 'credential', warnings: [] });
    expect(resolved.key.keyId).toBe(keyId);
    expect(existsSync(join(dataDir, SIGNING_KEY_FILE))).toBe(false);
  });

  it('neither: the data folder key is created at first start and loaded after, as before', () => {
    const { dataDir, env } = world();
    const first = resolveSigningKey(env());
    expect(first.source).toBe('data_dir');
    expect(resolveSigningKey(env()).key.keyId).toBe(first.key.keyId);
    expect(loadOrCreateSigningKey(dataDir).keyId).toBe(first.key.keyId);
  });

  it('RECEIPT_KEY_PATH naming a missing file stops the start with one line saying what to do, and creates nothing there', () => {
    const { apart, env } = world();
    const keyPath = join(apart, 'missing.pem');
    expect(refusal(() => resolveSigningKey(env({ receiptKeyPath: keyPath })))).toBe(
      `RECEIPT_KEY_PATH names ${keyPath}, which does not exist (ENOENT): the server never creates a key there: ` +
        `make one (openssl genpkey -algorithm ed25519 -out ${keyPath}), or unset RECEIPT_KEY_PATH to keep the key in the data folder`,
    );
    expect(existsSync(keyPath)).toBe(false);
  });

  // A folder stands for a file the server cannot read: a file with mode 000 would not do, since
  // tests may run as root, who reads it anyway.
  it('RECEIPT_KEY_PATH naming what cannot be read says how to let the server read it', () => {
    const { apart, env } = world();
    expect(refusal(() => resolveSigningKey(env({ receiptKeyPath: apart })))).toBe(
      `RECEIPT_KEY_PATH names ${apart}, which cannot be read by the server's user (EISDIR): ` +
        `let the server's user read it, or hand it over with systemd LoadCredential=receipt-signing-key.pem:${apart}`,
    );
  });

  it('RECEIPT_KEY_PATH naming a file that is no PEM private key says what it must hold', () => {
    const { apart, env } = world();
    const keyPath = join(apart, 'key.pem');
    writeFileSync(keyPath, 'not a key');
    const message = refusal(() => resolveSigningKey(env({ receiptKeyPath: keyPath })));
    expect(message).toMatch(new RegExp(`^RECEIPT_KEY_PATH names ${keyPath}, which is not an unencrypted PEM private key \\(.+\\): it must hold an Ed25519 private key in PKCS#8 PEM \\(openssl genpkey`));
    expect(message).not.toContain('\n');
  });

  it('RECEIPT_KEY_PATH naming a key of another kind says receipts are signed with Ed25519', () => {
    const { apart, env } = world();
    const keyPath = join(apart, 'key.pem');
    writeFileSync(keyPath, generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }));
    expect(refusal(() => resolveSigningKey(env({ receiptKeyPath: keyPath })))).toBe(
      `RECEIPT_KEY_PATH names ${keyPath}, which is not an Ed25519 private key (it holds an ec key): receipts are signed with Ed25519 (openssl genpkey -algorithm ed25519 -out ${keyPath})`,
    );
  });

  it('a credential of another kind names the credential', () => {
    const { apart, env } = world();
    const keyPath = join(apart, SIGNING_KEY_FILE);
    writeFileSync(keyPath, generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }));
    expect(refusal(() => resolveSigningKey(env({ credentialsDirectory: apart })))).toMatch(new RegExp(`^the systemd credential ${keyPath} is not an Ed25519 private key`));
  });
});

describe('key file: the warnings at start', () => {
  it('the data folder key gives both: it sits in the data folder, and the server may write it', () => {
    const { env } = world();
    expect(resolveSigningKey(env()).warnings).toEqual(['receipt_key_in_data_dir', 'receipt_key_writable']);
  });

  it('a key named inside the data folder, read-only, gives receipt_key_in_data_dir', () => {
    const { dataDir, env } = world();
    mkdirSync(dataDir, { recursive: true });
    const keyPath = join(dataDir, 'elsewhere.pem');
    writeKey(keyPath, 0o400);
    expect(resolveSigningKey(env({ receiptKeyPath: keyPath })).warnings).toEqual(['receipt_key_in_data_dir']);
  });

  it('a key in a folder of the data folder whose name starts with two dots is inside it', () => {
    const { dataDir, env } = world();
    mkdirSync(join(dataDir, '..keys'), { recursive: true });
    const keyPath = join(dataDir, '..keys', 'key.pem');
    writeKey(keyPath, 0o400);
    expect(resolveSigningKey(env({ receiptKeyPath: keyPath })).warnings).toEqual(['receipt_key_in_data_dir']);
  });

  it('a link from outside to a key inside the data folder is judged by where the file is', () => {
    const { dataDir, apart, env } = world();
    mkdirSync(dataDir, { recursive: true });
    writeKey(join(dataDir, 'real.pem'), 0o400);
    symlinkSync(join(dataDir, 'real.pem'), join(apart, 'link.pem'));
    expect(resolveSigningKey(env({ receiptKeyPath: join(apart, 'link.pem') })).warnings).toEqual(['receipt_key_in_data_dir']);
  });

  it('a key outside the data folder that the server may write gives receipt_key_writable', () => {
    const { apart, env } = world();
    const keyPath = join(apart, 'key.pem');
    writeKey(keyPath, 0o600);
    expect(resolveSigningKey(env({ receiptKeyPath: keyPath })).warnings).toEqual(['receipt_key_writable']);
  });

  it('a key outside the data folder with mode 0400 gives no warning, as root too', () => {
    const { apart, env } = world();
    const keyPath = join(apart, 'key.pem');
    writeKey(keyPath, 0o400);
    expect(resolveSigningKey(env({ receiptKeyPath: keyPath })).warnings).toEqual([]);
  });

  // Root may write any file, so access(W_OK) always says yes; as root the mode bits that apply
  // to root are read instead. Owners and groups other than root's can only be given as stats.
  it.runIf(process.getuid?.() === 0)('as root: writable by the mode bits of owner, group or others, whichever apply to root', () => {
    const otherUid = 4_242;
    const otherGid = 4_243;
    const table: [number, number, number, boolean][] = [
      [0o600, 0, otherGid, true],
      [0o400, 0, otherGid, false],
      [0o600, otherUid, otherGid, false],
      [0o660, otherUid, process.getgid?.() ?? 0, true],
      [0o602, otherUid, otherGid, true],
    ];
    const path = join(tempDir(), 'key.pem');
    writeFileSync(path, '');
    for (const [mode, uid, gid, writable] of table) expect([mode.toString(8), uid, gid, writableByServer(path, { mode, uid, gid })]).toEqual([mode.toString(8), uid, gid, writable]);
  });
});

describe('key file: the export finds the key as the server does', () => {
  it('with RECEIPT_KEY_PATH, the export signs with that key, and creates nothing', () => {
    const { dataDir, apart, env } = world();
    const keyPath = join(apart, 'key.pem');
    const keyId = writeKey(keyPath, 0o400);
    expect(readSigningKey(env({ receiptKeyPath: keyPath })).keyId).toBe(keyId);
    expect(existsSync(dataDir)).toBe(false);
  });

  it('a key that cannot be used is an input error of the export (exit 66), with the same line', () => {
    const { apart, env } = world();
    const keyPath = join(apart, 'missing.pem');
    expect(() => readSigningKey(env({ receiptKeyPath: keyPath }))).toThrow(ExportInputError);
    expect(() => readSigningKey(env({ receiptKeyPath: keyPath }))).toThrow(`RECEIPT_KEY_PATH names ${keyPath}, which does not exist`);
  });

  it('without a key anywhere, the export creates none in the data folder', () => {
    const { dataDir, env } = world();
    expect(() => readSigningKey(env())).toThrow(/DATA_DIR must be the server's data folder/);
    expect(existsSync(join(dataDir, SIGNING_KEY_FILE))).toBe(false);
  });

  it('a published public half that is not the key’s own is refused', () => {
    const { dataDir, apart, env } = world();
    const keyPath = join(apart, 'key.pem');
    writeKey(keyPath, 0o400);
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(join(dataDir, PUBLIC_KEY_FILE), loadOrCreateSigningKey(tempDir()).publicKeyPem);
    expect(() => readSigningKey(env({ receiptKeyPath: keyPath }))).toThrow(/is not the public half of the receipt signing key/);
  });
});
