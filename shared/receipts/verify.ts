import { isJsonObject, type Json, type JsonObject, plain } from '../json.ts';
import { canonicalWithoutHash } from './canonical.ts';
import { keyFor, type ReceiptKeys, signatureHolds, subtle } from './keys.ts';
import { judgeClaims, Problems, walkConfirmations, walkPeople, walkSends } from './passes.ts';
import { legacyReceiptSigningInput, RECEIPT_VERSION, type ReceiptVersion, receiptSigningInput, type VerifyProblemCode, type VerifyReport } from './report.ts';

// The one receipt verifier (spec §7), for the server, the command line and the browser alike: it
// imports nothing from node: and hashes and checks signatures with WebCrypto, which Node 20 and
// every current browser provide (a browser only in a secure context: https or localhost).

export { keysFromKeySet, type ReceiptKeys } from './keys.ts';
export type { VerifyProblem, VerifyProblemCode, VerifyReport } from './report.ts';

interface ReadReceipt {
  version: ReceiptVersion;
  effectId: string;
  keyId: string | null;
  signature: Json | undefined;
  entries: JsonObject[];
}

/**
 * Verify a receipt offline (spec §7): the chain, the signature when keys are given, the shape,
 * then what the entries prove (sent once, under live authority, on facts that held, by whom,
 * and what the target confirmed). Never throws on bad input: a malformed receipt is a report
 * with `valid: false` and a `malformed_receipt` problem.
 */
export async function verifyReceipt(receipt: unknown, keys?: ReceiptKeys): Promise<VerifyReport> {
  const read = readReceipt(receipt);
  if (!('entries' in read)) return unreadReport(read, keys);
  const { effectId, entries } = read;
  const problems = new Problems();
  // Hashing and the signature are the costly parts and need no pass before them, so they run at once.
  const [digests, key] = await Promise.all([Promise.all(entries.map(entryDigest)), keys === undefined ? null : keyFor(keys, read.keyId)]);
  const tamperEvident = checkChain(effectId, entries, digests, problems);
  const signed = key === null ? null : await checkSignature(read, key, problems);
  if (entries.length === 0) problems.add('empty_receipt');
  else if (entries[0]?.kind !== 'PROPOSED') problems.at(0, entries[0], 'no_initial_proposal');
  const sends = walkSends(entries, problems);
  const people = walkPeople(entries, problems);
  const confirmations = walkConfirmations(entries, sends.openAtEnd, problems);
  const claims = judgeClaims(entries, sends, problems);
  return {
    effect_id: effectId,
    key_id: read.keyId,
    valid: problems.count === 0,
    tamper_evident: tamperEvident,
    signed,
    happened: claims.happened,
    happened_once: sends.once && !confirmations.multipleRefunds && !claims.multipleCommits,
    authorized_when_fired: claims.authorized,
    assumptions_held: claims.assumptionsHeld,
    refused: claims.happened === true ? null : sends.refused,
    evidence: sends.evidence,
    rechecked_at_recovery: sends.atRecovery,
    ...people,
    confirmed_by_target: confirmations.confirmedByTarget,
    confirmation: confirmations.confirmation,
    problems: problems.list,
  };
}

type Unreadable = { effectId: string | null; keyId: string | null; code: 'malformed_receipt' | 'unsupported_version'; message: string };

/**
 * The receipt as JSON, or why it is not one. A JSON round trip first, so nothing exotic reaches
 * the passes. A receipt of a version this verifier does not know is not read further: what its
 * signature covers, and what its entries mean, are that version's to say.
 */
function readReceipt(receipt: unknown): ReadReceipt | Unreadable {
  let value: Json;
  try {
    value = plain(receipt);
  } catch (error) {
    const message = `The receipt is not JSON (${error instanceof Error ? error.message : String(error)}).`;
    return { effectId: null, keyId: null, code: 'malformed_receipt', message };
  }
  if (!isJsonObject(value)) return { effectId: null, keyId: null, code: 'malformed_receipt', message: 'The receipt is not a JSON object.' };
  const effectId = typeof value.effect_id === 'string' ? value.effect_id : null;
  const keyId = typeof value.key_id === 'string' ? value.key_id : null;
  const unreadable = (code: Unreadable['code'], message: string): Unreadable => ({ effectId, keyId, code, message });
  // A receipt without v was signed before receipts carried a version: it is version 1.
  const version = value.v === undefined ? 1 : value.v === RECEIPT_VERSION ? RECEIPT_VERSION : null;
  if (version === null) {
    const shown = JSON.stringify(value.v).slice(0, 40);
    const message = `The receipt is of version ${shown}, which this verifier does not read (it reads receipts without v, and v ${RECEIPT_VERSION}), so nothing in it was checked: verify it with the Interlock release that signed it, or a newer one.`;
    return unreadable('unsupported_version', message);
  }
  if (effectId === null) return unreadable('malformed_receipt', 'The receipt has no string effect_id.');
  if (!Array.isArray(value.entries)) return unreadable('malformed_receipt', 'The receipt has no list of entries.');
  const entries: JsonObject[] = [];
  for (const [index, entry] of value.entries.entries()) {
    if (!isJsonObject(entry)) return unreadable('malformed_receipt', `Entry ${index} of the receipt is not a JSON object.`);
    entries.push(entry);
  }
  return { version, effectId, keyId, signature: value.signature, entries };
}

/** The report on a receipt that could not be read: nothing is proven, and the one problem says why. */
function unreadReport(read: Unreadable, keys?: ReceiptKeys): VerifyReport {
  const problem: { code: VerifyProblemCode; message: string } = { code: read.code, message: read.message };
  return {
    effect_id: read.effectId,
    key_id: read.keyId,
    valid: false,
    tamper_evident: false,
    signed: keys === undefined ? null : false,
    happened: 'unknown',
    happened_once: false,
    authorized_when_fired: null,
    assumptions_held: null,
    refused: null,
    evidence: null,
    rechecked_at_recovery: null,
    approved_by: null,
    approval_verified: null,
    escalations: [],
    confirmed_by_target: null,
    confirmation: [],
    problems: [problem],
  };
}

/**
 * The lowercase hex SHA-256 an entry's hash must equal: of the canonical JSON of every member but
 * `hash`. Null for an entry with no string hash to compare, or content with no canonical form (a
 * lone surrogate), which no journal ever wrote.
 */
async function entryDigest(entry: JsonObject): Promise<string | null> {
  if (typeof entry.hash !== 'string') return null;
  let text: string;
  try {
    text = canonicalWithoutHash(entry);
  } catch {
    return null;
  }
  const digest = await subtle().digest('SHA-256', new TextEncoder().encode(text));
  return hexOf(new Uint8Array(digest));
}

const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

function hexOf(bytes: Uint8Array): string {
  let text = '';
  for (const byte of bytes) text += HEX[byte];
  return text;
}

/** Chain pass (§7.1): every entry is this effect's, unaltered, and linked to the one before it. */
function checkChain(effectId: string, entries: readonly JsonObject[], digests: readonly (string | null)[], problems: Problems): boolean {
  const before = problems.count;
  let prev: string | null = null;
  for (const [index, entry] of entries.entries()) {
    if (entry.effect_id !== effectId) {
      problems.at(index, entry, 'foreign_entry', `belongs to effect ${String(entry.effect_id)}, not ${effectId}.`);
    }
    const linked = entry.prev === null || typeof entry.prev === 'string';
    if (typeof entry.hash !== 'string' || typeof entry.kind !== 'string' || !linked) {
      problems.at(index, entry, 'malformed_receipt');
    } else if (digests[index] !== entry.hash) {
      problems.at(index, entry, 'altered_entry');
    }
    if (linked && entry.prev !== prev) problems.at(index, entry, 'chain_break');
    prev = typeof entry.hash === 'string' ? entry.hash : null;
  }
  return problems.count === before;
}

/**
 * Signature pass (§7.2): the key's Ed25519 signature over what the receipt's version signs: for
 * v2 the effect id, the last entry's hash and the key id; for v1 the first two only.
 */
async function checkSignature(read: ReadReceipt, key: CryptoKey | string, problems: Problems): Promise<boolean> {
  if (typeof key === 'string') {
    problems.add('unknown_key', key);
    return false;
  }
  const message = signedMessage(read);
  const signed = message !== null && (await signatureHolds(key, message, read.signature));
  if (!signed) problems.add('bad_signature');
  return signed;
}

/**
 * The message a receipt's signature must cover; null when no signer could have written one: a v2
 * receipt without a string key_id, or one whose ids have no canonical JSON (a lone surrogate).
 */
function signedMessage(read: ReadReceipt): string | null {
  const lastHash = read.entries.at(-1)?.hash;
  const last = typeof lastHash === 'string' ? lastHash : null;
  if (read.version === 1) return legacyReceiptSigningInput(read.effectId, last);
  if (read.keyId === null) return null;
  try {
    return receiptSigningInput(read.effectId, last, read.keyId);
  } catch {
    return null;
  }
}
