import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  randomUUID,
} from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { keysFromKeySet } from '../../shared/receipts/keys.ts';

/** The key that signs receipts: its id, the private key, and the public key as PEM (SPKI). */
export interface SigningKey {
  keyId: string;
  privateKey: KeyObject;
  publicKeyPem: string;
}

/** One published verification key, as served at `/.well-known/interlock-keys`. */
export interface PublishedKey {
  key_id: string;
  alg: 'Ed25519';
  public_key_pem: string;
}

/** The JSON served at `/.well-known/interlock-keys`. */
export interface PublicKeySet {
  keys: PublishedKey[];
}

/** A receipt signing key that cannot be used: the message is one line that says what to do, and the server does not start. */
export class SigningKeyError extends Error {}

/** File name of the receipt signing key inside the data directory, and of the systemd credential that hands one over. */
export const SIGNING_KEY_FILE = 'receipt-signing-key.pem';
/** The public half, written next to the private key for operators and offline verifiers. */
export const PUBLIC_KEY_FILE = 'receipt-signing-key.pub.pem';

/** Hex characters of SHA-256 kept for a key id: 64 bits name a key without ambiguity in practice. */
const keyIdHexChars = 16;

/** A key id: the first 16 hex chars of SHA-256 over the public key's DER (SPKI) encoding. */
export function keyIdFor(publicKey: KeyObject): string {
  const der = publicKey.export({ type: 'spki', format: 'der' });
  return createHash('sha256').update(der).digest('hex').slice(0, keyIdHexChars);
}

/**
 * Load the receipt signing key from `<dataDir>/receipt-signing-key.pem`, creating an Ed25519
 * key pair there at first start. The private key is written with mode 0600 through a temporary
 * file and a hard link, so two processes starting at once never see a half-written key and both
 * end up with the one that landed first.
 */
export function loadOrCreateSigningKey(dataDir: string): SigningKey {
  mkdirSync(dataDir, { recursive: true });
  const privatePath = join(dataDir, SIGNING_KEY_FILE);
  if (!existsSync(privatePath)) writePrivateKeyOnce(privatePath);
  const read = readPrivateKeyFile(privatePath);
  if ('problem' in read) {
    const fix = read.problem === 'unreadable' ? 'let the server read it' : 'move it away to have a new one created';
    throw new SigningKeyError(`${privatePath} ${KEY_FILE_PROBLEM_WORDS[read.problem]} (${read.detail}); ${fix}`);
  }
  const key = signingKeyOf(read);
  writePublicKeyIfChanged(join(dataDir, PUBLIC_KEY_FILE), key.publicKeyPem);
  return key;
}

/** Why a private key file cannot sign receipts. */
export const KEY_FILE_PROBLEMS = ['missing', 'unreadable', 'not_pem', 'not_ed25519'] as const;
/** One reason a key file cannot be used. */
export type KeyFileProblem = (typeof KEY_FILE_PROBLEMS)[number];

/** Each problem as the end of a sentence about the file; the caller adds what to do, which depends on where the key came from. */
export const KEY_FILE_PROBLEM_WORDS: Readonly<Record<KeyFileProblem, string>> = {
  missing: 'does not exist',
  unreadable: "cannot be read by the server's user",
  not_pem: 'is not an unencrypted PEM private key',
  not_ed25519: 'is not an Ed25519 private key',
};

/**
 * An Ed25519 private key read from a PEM file, or why there is none: the file's absence and a
 * file that holds no such key are the world's mistakes, returned for the caller to word.
 */
export function readPrivateKeyFile(path: string): KeyObject | { problem: KeyFileProblem; detail: string } {
  let pem: string;
  try {
    pem = readFileSync(path, 'utf8');
  } catch (error) {
    const code = error instanceof Error && 'code' in error && typeof error.code === 'string' ? error.code : null;
    return { problem: code === 'ENOENT' ? 'missing' : 'unreadable', detail: code ?? String(error) };
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(pem);
  } catch (error) {
    return { problem: 'not_pem', detail: error instanceof Error ? error.message : String(error) };
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') return { problem: 'not_ed25519', detail: `it holds an ${privateKey.asymmetricKeyType ?? 'unknown'} key` };
  return privateKey;
}

/** The signing key of an Ed25519 private key: its id and public half computed from it. */
export function signingKeyOf(privateKey: KeyObject): SigningKey {
  const publicKey = createPublicKey(privateKey);
  const publicKeyPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  return { keyId: keyIdFor(publicKey), privateKey, publicKeyPem };
}

function writePrivateKeyOnce(privatePath: string): void {
  const { privateKey } = generateKeyPairSync('ed25519');
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const temporary = `${privatePath}.${randomUUID()}.tmp`;
  writeFileSync(temporary, pem, { mode: 0o600, flag: 'wx' });
  try {
    linkSync(temporary, privatePath);
  } catch (error) {
    // Another process created the key first; its key wins and ours is discarded.
    if (!(error instanceof Error && 'code' in error && error.code === 'EEXIST')) throw error;
  } finally {
    unlinkSync(temporary);
  }
}

/** Write the public half where operators and offline verifiers find it, through a rename, unless it is there already. */
export function writePublicKeyIfChanged(publicPath: string, publicKeyPem: string): void {
  if (existsSync(publicPath) && readFileSync(publicPath, 'utf8') === publicKeyPem) return;
  const temporary = `${publicPath}.${randomUUID()}.tmp`;
  writeFileSync(temporary, publicKeyPem, { mode: 0o644 });
  renameSync(temporary, publicPath);
}

/** The key set served at `/.well-known/interlock-keys`, so anyone can verify a receipt offline. */
export function publicKeySet(keys: readonly Pick<SigningKey, 'keyId' | 'publicKeyPem'>[]): PublicKeySet {
  return { keys: keys.map((key) => ({ key_id: key.keyId, alg: 'Ed25519', public_key_pem: key.publicKeyPem })) };
}

/**
 * Read a published key set back into verification keys by key id, as PEM. The shape is read as
 * the browser's verifier reads it; here each key's id is also recomputed from its PEM, so a set
 * that names a key by someone else's id is refused rather than trusted.
 */
export function parsePublicKeySet(value: unknown): Map<string, string> {
  const keys = keysFromKeySet(value);
  for (const [index, [keyId, pem]] of [...keys].entries()) {
    const publicKey = createPublicKey(pem);
    if (publicKey.asymmetricKeyType !== 'ed25519') throw new Error(`keys[${index}] is not an Ed25519 public key`);
    if (keyIdFor(publicKey) !== keyId) throw new Error(`keys[${index}] key_id does not match its public key`);
  }
  return keys;
}
