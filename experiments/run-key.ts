import { generateKeyPairSync } from 'node:crypto';
import { keyIdFor, type SigningKey } from '../server/receipts/keys.ts';

/** A throwaway receipt key for one experiment run: nothing is written to disk. */
export function generateSigningKeyForRun(): SigningKey {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { keyId: keyIdFor(publicKey), privateKey, publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString() };
}
