import { isJsonObject } from '../json.ts';

// Receipt verification keys as WebCrypto sees them, so the same code checks a signature on Node
// and in a browser: a PEM (SPKI) public key is imported as an Ed25519 CryptoKey, and a signature
// is read from base64url only in its one canonical spelling.

/**
 * Keys to check a receipt's signature with: one public key (PEM SPKI text or a CryptoKey), or the
 * published keys by key id, as `keysFromKeySet` reads them from `/.well-known/interlock-keys`.
 */
export type ReceiptKeys = string | CryptoKey | ReadonlyMap<string, string | CryptoKey>;

/** The algorithm of every receipt signature. */
const ED25519 = { name: 'Ed25519' } as const;

/**
 * The verification keys by key id from the JSON served at `/.well-known/interlock-keys`
 * (`{ keys: [{ key_id, alg: 'Ed25519', public_key_pem }] }`). Throws, with a sentence naming the
 * item, for a set of another shape. The key ids are taken as published; the server's
 * `parsePublicKeySet` also recomputes each from its key.
 */
export function keysFromKeySet(json: unknown): Map<string, string> {
  if (!isJsonObject(json) || !Array.isArray(json.keys)) throw new Error('a key set is an object with a "keys" list');
  const keys = new Map<string, string>();
  for (const [index, item] of json.keys.entries()) {
    if (!isJsonObject(item) || typeof item.key_id !== 'string' || typeof item.public_key_pem !== 'string') {
      throw new Error(`keys[${index}] needs a string key_id and public_key_pem`);
    }
    if (item.alg !== 'Ed25519') throw new Error(`keys[${index}] has alg ${String(item.alg)}; only Ed25519 is used`);
    // Two keys under one id would leave which one checks a receipt to the order of the list.
    if (keys.has(item.key_id)) throw new Error(`keys[${index}] repeats key_id ${item.key_id}`);
    keys.set(item.key_id, item.public_key_pem);
  }
  return keys;
}

/** WebCrypto's subtle interface; a browser hides it outside a secure context, which no receipt can fix. */
export function subtle(): SubtleCrypto {
  const found = globalThis.crypto?.subtle;
  if (found === undefined) throw new Error('verifying a receipt needs WebCrypto (crypto.subtle), which a browser offers only over https or on localhost');
  return found;
}

/** The key to check a receipt with, or a sentence saying why there is none. */
export async function keyFor(keys: ReceiptKeys, keyId: string | null): Promise<CryptoKey | string> {
  if (typeof keys === 'string') return (await importPublicKey(keys)) ?? 'The key given is not a readable Ed25519 public key.';
  if (!isKeyMap(keys)) return keys;
  if (keyId === null) return 'The receipt names no key_id, so no published key can check its signature.';
  const key = keys.get(keyId);
  if (key === undefined) return `No published key has key_id ${keyId}.`;
  if (typeof key !== 'string') return key;
  return (await importPublicKey(key)) ?? `The key published as ${keyId} is not a readable public key.`;
}

function isKeyMap(keys: CryptoKey | ReadonlyMap<string, string | CryptoKey>): keys is ReadonlyMap<string, string | CryptoKey> {
  return typeof (keys as { get?: unknown }).get === 'function';
}

/**
 * Keys imported from PEM, by their text: a server or a page checks many receipts against the one
 * key it publishes, and importing it again costs about as much as the rest of a verification.
 */
const importedKeys = new Map<string, Promise<CryptoKey | null>>();
/** PEM texts remembered at most: a deployment publishes a key or two; older ones are imported again. */
const importedKeysMax = 16;

/** A PEM SPKI public key imported for Ed25519 verification; null when it is not one. */
function importPublicKey(pem: string): Promise<CryptoKey | null> {
  let imported = importedKeys.get(pem);
  if (imported === undefined) {
    imported = importDer(derOf(pem));
    if (importedKeys.size >= importedKeysMax) importedKeys.delete(importedKeys.keys().next().value!);
    importedKeys.set(pem, imported);
  }
  return imported;
}

async function importDer(der: Uint8Array<ArrayBuffer> | null): Promise<CryptoKey | null> {
  if (der === null) return null;
  const webCrypto = subtle();
  try {
    return await webCrypto.importKey('spki', der, ED25519, false, ['verify']);
  } catch {
    return null;
  }
}

/** The DER bytes of a single `PUBLIC KEY` PEM block; null for any other text. */
function derOf(pem: string): Uint8Array<ArrayBuffer> | null {
  const match = /^\s*-----BEGIN PUBLIC KEY-----([A-Za-z0-9+/=\s]+)-----END PUBLIC KEY-----\s*$/.exec(pem);
  if (match === null) return null;
  try {
    return bytesOf(atob(match[1]!.replace(/\s+/g, '')));
  } catch {
    return null;
  }
}

/** True when Ed25519 `signature` (base64url) by `key` covers `message` (UTF-8). Never throws. */
export async function signatureHolds(key: CryptoKey, message: string, signature: unknown): Promise<boolean> {
  const bytes = typeof signature === 'string' ? canonicalBase64url(signature) : null;
  if (bytes === null) return false;
  const webCrypto = subtle();
  try {
    return await webCrypto.verify(ED25519, key, bytes, new TextEncoder().encode(message));
  } catch {
    // A key of another algorithm, or one not allowed to verify.
    return false;
  }
}

/**
 * The bytes of a base64url text in its canonical spelling (no padding, no stray characters, zero
 * spare bits), else null: so one signature has exactly one accepted form.
 */
function canonicalBase64url(text: string): Uint8Array<ArrayBuffer> | null {
  if (text.length === 0 || text.length % 4 === 1 || !/^[A-Za-z0-9_-]+$/.test(text)) return null;
  const padding = '='.repeat((4 - (text.length % 4)) % 4);
  const binary = atob(text.replaceAll('-', '+').replaceAll('_', '/') + padding);
  const spelled = btoa(binary).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
  return spelled === text ? bytesOf(binary) : null;
}

/** The bytes of a binary string (one character per byte, as atob returns). */
function bytesOf(binary: string): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}
