import { keysFromKeySet, type VerifyReport, verifyReceipt } from '../receipts/verify.ts';

export type { VerifyReport };

/** Verifies receipts against one server's published keys, fetched on first use. */
export interface ReceiptVerifier {
  verify(receipt: unknown): Promise<VerifyReport>;
}

/**
 * A verifier that reads the key set once through `readKeySet` (the JSON of
 * `/.well-known/interlock-keys`) and checks every receipt offline with the shared WebCrypto
 * verifier. A failed read is not kept: the next verification reads again.
 */
export function receiptVerifier(readKeySet: () => Promise<unknown>): ReceiptVerifier {
  let keys: Promise<Map<string, string>> | null = null;
  const loadKeys = () => {
    keys ??= readKeySet()
      .then(keysFromKeySet)
      .catch((error: unknown) => {
        keys = null;
        throw error;
      });
    return keys;
  };
  return {
    async verify(receipt) {
      return verifyReceipt(receipt, await loadKeys());
    },
  };
}
