import { execFileSync } from 'node:child_process';
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { checkpointBody, noteKeyHash, noteKeyName, readCheckpoint, signCheckpoint, verifierKey } from '../../server/integrity/checkpoint.ts';
import { keyIdFor } from '../../server/receipts/keys.ts';

// Known answers for the checkpoint's signed note, computed by test/integrity/signed_note_kat.py
// with Python's hashlib, base64 and RFC 8032's own Ed25519, none of it Interlock's code. Ed25519
// is deterministic, so the whole note must agree byte for byte.

const KAT = fileURLToPath(new URL('./signed_note_kat.py', import.meta.url));
/** RFC 8032 section 7.1, test 1: its secret key, its public key, and its signature of the empty message. */
const RFC8032_TEST1 = {
  seed: '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60',
  public: 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a',
  emptySignature: 'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b',
};

function python(input: object): Record<string, string> {
  try {
    return JSON.parse(execFileSync('python3', [KAT], { input: JSON.stringify(input), encoding: 'utf8' })) as Record<string, string>;
  } catch (error) {
    throw new Error(`the known answers need python3 (Debian's python3; CI has it): ${error instanceof Error ? error.message : String(error)}`);
  }
}

const privateKey = createPrivateKey({ key: Buffer.from(`302e020100300506032b657004220420${RFC8032_TEST1.seed}`, 'hex'), format: 'der', type: 'pkcs8' });
const publicKey = createPublicKey(privateKey);
const keyId = keyIdFor(publicKey);

describe.each([
  { origin: 'interlock/journal/00aa11bb22cc33dd/epoch/0', size: 0, head: '0'.repeat(64) },
  { origin: 'interlock/journal/00aa11bb22cc33dd/epoch/0', size: 1000, head: 'a3'.repeat(32) },
  { origin: 'interlock/journal/ffffffffffffffff/epoch/7', size: 123_456_789, head: '0123456789abcdef'.repeat(4) },
])('the checkpoint of $origin at size $size', (checkpoint) => {
  const known = python({ seed_hex: RFC8032_TEST1.seed, key_id: keyId, ...checkpoint });

  it('Python’s Ed25519 is RFC 8032’s (test 1)', () => {
    expect(known.public_hex).toBe(RFC8032_TEST1.public);
    expect(known.rfc8032_test1_empty).toBe(RFC8032_TEST1.emptySignature);
  });

  it('key name, key hash, verifier key, body and signed note agree byte for byte', () => {
    const name = noteKeyName(keyId);
    expect(name).toBe(known.key_name);
    expect(noteKeyHash(name, publicKey).toString('hex')).toBe(known.key_hash_hex);
    expect(verifierKey(name, publicKey)).toBe(known.vkey);
    expect(checkpointBody(checkpoint)).toBe(known.body);
    expect(signCheckpoint(checkpoint, { keyId, privateKey })).toBe(known.note);
  });

  it('the note Python signed reads back as the checkpoint, by PEM key and by verifier key', () => {
    const publicKeyPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    expect(readCheckpoint(known.note ?? '', { publicKeyPem, keyId })).toEqual({ ok: true, checkpoint, keyName: known.key_name });
    expect(readCheckpoint(known.note ?? '', { vkey: known.vkey ?? '' })).toEqual({ ok: true, checkpoint, keyName: known.key_name });
  });
});
