import { accessSync, constants, existsSync, mkdirSync, realpathSync, type Stats, statSync } from 'node:fs';
import { isAbsolute, join, relative, sep } from 'node:path';
import { credentialPath } from '../config/secret-file.ts';
import type { InterlockEnv } from '../config/env.ts';
import {
  KEY_FILE_PROBLEM_WORDS,
  loadOrCreateSigningKey,
  PUBLIC_KEY_FILE,
  readPrivateKeyFile,
  SIGNING_KEY_FILE,
  type SigningKey,
  SigningKeyError,
  signingKeyOf,
  writePublicKeyIfChanged,
} from './keys.ts';

// Where the receipt signing key is kept. Whoever can write the data folder (a backup restored, a
// sync, a shared volume) must not be able to read the key, or they could sign receipts for chains
// they wrote. So the key may live elsewhere: named by RECEIPT_KEY_PATH, or handed over by systemd
// (`LoadCredential=receipt-signing-key.pem:/etc/interlock/key.pem` puts it in
// $CREDENTIALS_DIRECTORY). Such a key is read and never created; only the data folder's own key
// is created at first start, as it always was. The server and the export find it the same way.

/** Where the signing key comes from, in the order it is looked for. */
export const SIGNING_KEY_SOURCES = ['receipt_key_path', 'credential', 'data_dir'] as const;
/** One place the signing key comes from. */
export type SigningKeySource = (typeof SIGNING_KEY_SOURCES)[number];

/** What the server warns about its key at start, each a stable code of its log line. */
export const SIGNING_KEY_WARNINGS = ['receipt_key_in_data_dir', 'receipt_key_writable'] as const;
/** One warning about the signing key. */
export type SigningKeyWarning = (typeof SIGNING_KEY_WARNINGS)[number];

/** The sentence logged with each warning: what is at risk and what to do. */
export const SIGNING_KEY_WARNING_MESSAGES: Readonly<Record<SigningKeyWarning, string>> = {
  receipt_key_in_data_dir:
    'the receipt signing key is inside the data folder, so whoever can write there may read it and sign receipts: move it out and name it with RECEIPT_KEY_PATH, or hand it over with systemd LoadCredential=receipt-signing-key.pem:<path>',
  receipt_key_writable:
    "the receipt signing key file is writable by the server's user, so whoever takes the server over can replace it: make it read-only (chmod 0400) or owned by another user",
};

/** The variables that say where the key is. */
export type SigningKeyEnv = Pick<InterlockEnv, 'dataDir' | 'receiptKeyPath' | 'credentialsDirectory'>;

/** The key file to use and how it was chosen: RECEIPT_KEY_PATH, else a systemd credential that exists, else the data folder's. */
export function signingKeyLocation(env: SigningKeyEnv, exists: (path: string) => boolean = existsSync): { source: SigningKeySource; path: string } {
  if (env.receiptKeyPath !== null) return { source: 'receipt_key_path', path: env.receiptKeyPath };
  const credential = credentialPath(env.credentialsDirectory, SIGNING_KEY_FILE, exists);
  if (credential !== null) return { source: 'credential', path: credential };
  return { source: 'data_dir', path: join(env.dataDir, SIGNING_KEY_FILE) };
}

/** The signing key, where it was found, and what the server should warn about it. */
export interface ResolvedSigningKey {
  key: SigningKey;
  source: SigningKeySource;
  path: string;
  warnings: SigningKeyWarning[];
}

/**
 * The receipt signing key where the environment puts it (`signingKeyLocation`). A key handed over
 * is read, never created, and its public half is written to the data folder for operators and
 * offline verifiers. The data folder's key is created at first start, unless `readOnly` (the
 * export reads a server's key: it creates and writes nothing). A key that cannot be used throws a
 * `SigningKeyError` of one line that says what to do.
 */
export function resolveSigningKey(env: SigningKeyEnv, options: { readOnly?: boolean } = {}): ResolvedSigningKey {
  const { source, path } = signingKeyLocation(env);
  const readOnly = options.readOnly === true;
  let key: SigningKey;
  if (source === 'data_dir' && !readOnly) key = loadOrCreateSigningKey(env.dataDir);
  else {
    key = readHandedOverKey(source, path);
    if (source !== 'data_dir' && !readOnly) {
      mkdirSync(env.dataDir, { recursive: true });
      writePublicKeyIfChanged(join(env.dataDir, PUBLIC_KEY_FILE), key.publicKeyPem);
    }
  }
  return { key, source, path, warnings: signingKeyWarnings(path, env.dataDir) };
}

/** A key the server reads and never creates: named by RECEIPT_KEY_PATH, a systemd credential, or (for the export) the data folder's. */
function readHandedOverKey(source: SigningKeySource, path: string): SigningKey {
  const read = readPrivateKeyFile(path);
  if (!('problem' in read)) return signingKeyOf(read);
  const subject = {
    receipt_key_path: `RECEIPT_KEY_PATH names ${path}, which`,
    credential: `the systemd credential ${path}`,
    data_dir: `the receipt signing key ${path}`,
  }[source];
  const make = `openssl genpkey -algorithm ed25519 -out ${path}`;
  const fix = {
    missing:
      source === 'data_dir'
        ? "DATA_DIR must be the server's data folder, or RECEIPT_KEY_PATH name the key the server signs with"
        : `the server never creates a key there: make one (${make}), or unset RECEIPT_KEY_PATH to keep the key in the data folder`,
    unreadable: `let the server's user read it, or hand it over with systemd LoadCredential=${SIGNING_KEY_FILE}:${path}`,
    not_pem: `it must hold an Ed25519 private key in PKCS#8 PEM (${make})`,
    not_ed25519: `receipts are signed with Ed25519 (${make})`,
  }[read.problem];
  throw new SigningKeyError(`${subject} ${KEY_FILE_PROBLEM_WORDS[read.problem]} (${read.detail}): ${fix}`);
}

/** What to warn about the key file at `path`: inside the data folder, writable by the server's user. */
function signingKeyWarnings(path: string, dataDir: string): SigningKeyWarning[] {
  const warnings: SigningKeyWarning[] = [];
  const keyPath = realpathSync(path);
  // Both real paths, so a symbolic link into the data folder (or out of it) is judged by where the file is.
  const inside = relative(existsSync(dataDir) ? realpathSync(dataDir) : dataDir, keyPath);
  // Above the folder only when the first step is `..` itself: a folder of its own named `..keys` is inside it.
  if (inside !== '' && inside !== '..' && !inside.startsWith(`..${sep}`) && !isAbsolute(inside)) warnings.push('receipt_key_in_data_dir');
  if (writableByServer(keyPath, statSync(keyPath))) warnings.push('receipt_key_writable');
  return warnings;
}

/**
 * True when the server's user may write the key file. access(W_OK) answers that for every user
 * but root, who may write any file, so the answer would always be yes: for root the file's mode
 * bits are read instead, as they apply to root (the owner's bits when root owns the file, else the
 * group's or the others'), so a key made read-only (0400) or owned by another user gives no
 * warning when the server runs as root either.
 */
export function writableByServer(path: string, stat: Pick<Stats, 'mode' | 'uid' | 'gid'>): boolean {
  const uid = process.getuid?.();
  if (uid !== 0) {
    try {
      accessSync(path, constants.W_OK);
      return true;
    } catch {
      return false;
    }
  }
  if (stat.uid === uid) return (stat.mode & 0o200) !== 0;
  const groups = [process.getgid?.(), ...(process.getgroups?.() ?? [])];
  if (groups.includes(stat.gid)) return (stat.mode & 0o020) !== 0;
  return (stat.mode & 0o002) !== 0;
}
