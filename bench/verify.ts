import { performance } from 'node:perf_hooks';
import type { Entry } from '../shared/entries.ts';
import { loadOrCreateSigningKey } from '../server/receipts/keys.ts';
import { type SignedReceipt, signReceipt } from '../server/receipts/receipts.ts';
import { verifyReceipt } from '../server/receipts/verify.ts';
import { copyChain, type Templates } from './journal-gen.ts';

/** Distinct receipts verified in turn. */
const RECEIPTS = 500;

/** Signed receipts of copies of the template chains, in the generated journal's mix, and the keys that verify them. */
export function buildReceipts(templates: Templates, keyDir: string): { receipts: SignedReceipt[]; keys: Map<string, string> } {
  const key = loadOrCreateSigningKey(keyDir);
  const pool: Entry[][] = [...templates.routine, ...templates.approved, ...templates.rejected, ...templates.open];
  const receipts = Array.from({ length: RECEIPTS }, (_, k) => {
    const chain = copyChain(pool[k % pool.length]!, 1_000_000_000 + k);
    return signReceipt(chain[0]!.effect_id, chain, key);
  });
  return { receipts, keys: new Map([[key.keyId, key.publicKeyPem]]) };
}

/**
 * Receipts verified per second, one after another (each awaited before the next), with the
 * published key as PEM (as `/v1/receipts/:id/verify` and an offline verifier hold it): so the key
 * is imported into WebCrypto for every receipt. Every receipt must verify.
 */
export async function measureVerifyPerS(receipts: readonly SignedReceipt[], keys: Map<string, string>, durationMs: number): Promise<number> {
  const startMs = performance.now();
  let verified = 0;
  while (performance.now() - startMs < durationMs) {
    const receipt = receipts[verified % receipts.length]!;
    if (!(await verifyReceipt(receipt, keys)).signed) throw new Error(`receipt ${receipt.effect_id} did not verify`);
    verified += 1;
  }
  return verified / ((performance.now() - startMs) / 1000);
}
