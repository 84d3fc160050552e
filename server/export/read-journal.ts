import { sign } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StoredChain } from '../../db/port/journal-file.ts';
import { openJournalFile } from '../../db/sqlite-journal-file.ts';
import { globalHashOf } from '../journal/hash.ts';
import { isJsonObject, type Json } from '../../shared/json.ts';
import { resolveSigningKey, type SigningKeyEnv } from '../receipts/key-file.ts';
import { PUBLIC_KEY_FILE, type SigningKey, SigningKeyError } from '../receipts/keys.ts';
import { RECEIPT_VERSION, receiptSigningInput, type SignedReceipt, type VerifyReport } from '../receipts/receipts.ts';
import { verifyReceipt } from '../receipts/verify.ts';
import { exportLimits } from './limits.ts';

/** A half-open period of journal time: entries with `fromMs <= ts_ms < toMs`. */
export interface Period {
  fromMs: number;
  toMs: number;
}

/** A signed receipt over the entries as stored: a tampered entry stays as it is, for the verifier to name. */
export type StoredReceipt = Omit<SignedReceipt, 'entries'> & { entries: Json[] };

/** One receipt as the export reads it: the effect's chain up to the period's end, signed, and what the verifier says of it. */
export interface ReadReceipt {
  effectId: string;
  /** The chain's stored entries in journal order, each as its stored JSON parsed (a body that does not parse is kept as its text). */
  entries: Json[];
  receipt: StoredReceipt;
  report: VerifyReport;
  /**
   * Why the journal as a whole fails the check start-up makes (`code: message at seq N`), or null:
   * a receipt over a journal that fails it is not vouched for, however its own chain verifies.
   */
  journalProblem: string | null;
}

/** The journal or the signing key is not where the environment says: nothing can be exported. */
export class ExportInputError extends Error {}

/**
 * The receipt signing key the server signs with, found as the server finds it (RECEIPT_KEY_PATH,
 * a systemd credential, the data folder) but read and never created: an export signs receipts as
 * the server does when it hands one out, so `npm run verify` accepts what it writes.
 */
export function readSigningKey(env: SigningKeyEnv): SigningKey {
  let key: SigningKey;
  try {
    key = resolveSigningKey(env, { readOnly: true }).key;
  } catch (error) {
    if (error instanceof SigningKeyError) throw new ExportInputError(error.message);
    throw error;
  }
  const published = join(env.dataDir, PUBLIC_KEY_FILE);
  // The published half is what verifiers hold; one that differs from the private key means the folder was tampered with.
  if (existsSync(published) && readFileSync(published, 'utf8') !== key.publicKeyPem) {
    throw new ExportInputError(`${published} is not the public half of the receipt signing key`);
  }
  return key;
}

/**
 * Where an export reads the chains of a period: a journal file (SQLite), or the storage port's
 * journal (PostgreSQL, through `chainsInPeriodOf`); either gives the same chains for the same journal.
 */
export interface ChainSource {
  /** Where the journal is, as an operator names it. */
  readonly location: string;
  /** As JournalFile.chainsInPeriod gives them. */
  chainsInPeriod(period: Period, entriesMax: number): AsyncIterable<StoredChain>;
  close(): Promise<void>;
}

/**
 * The receipts a period touched, streamed from the journal (a file's path, or a source already
 * open, which the caller closes): every refund chain with an entry in the period, in the order of
 * its first entry there, each cut at the period's end (its last entry stamped before `toMs`), so
 * a closed period reads the same tomorrow even after its chains grew. A file's rows are read as
 * stored, around the journal store, which fails closed on an entry whose hash does not hold; there
 * such a receipt is handed to the verifier, which says what is wrong. One chain is in memory at a
 * time; the list of chains is the storage's to hold (SQLite spills it to disk).
 */
export async function* readReceipts(from: string | ChainSource, key: SigningKey, period: Period, journalProblem: string | null = null): AsyncGenerator<ReadReceipt> {
  if (typeof from === 'string' && !existsSync(from)) throw new ExportInputError(`no journal at ${from}: DB_PATH or DATA_DIR must name the server's journal`);
  const journal = typeof from === 'string' ? await openJournalFile(from) : from;
  const keys = new Map([[key.keyId, key.publicKeyPem]]);
  try {
    // From a file, one snapshot: every chain is read as the list of chains was.
    for await (const { effectId, bodies, seals } of journal.chainsInPeriod(period, exportLimits.chainEntriesMax)) {
      if (bodies.length > exportLimits.chainEntriesMax) throw new ExportInputError(`effect ${effectId} has more than ${exportLimits.chainEntriesMax} entries`);
      const entries = bodies.map(parseBody);
      // Message chains (the outbox) sit beside refund chains; a receipt is a refund's chain, which opens with a PROPOSED.
      const first = entries[0];
      if (!isJsonObject(first) || first.kind !== 'PROPOSED') continue;
      const receipt = signStored(effectId, entries, key);
      yield { effectId, entries, receipt, report: await verifyReceipt(receipt, keys), journalProblem: journalProblem ?? sealProblem(entries, seals) };
    }
  } finally {
    if (typeof from === 'string') await journal.close();
  }
}

/**
 * Why the chain is not the one the global chain sealed, or null: each entry's stored seal must be
 * the global hash of its own hash on the seal before it, so an old row edited with its hash
 * recomputed (which its own receipt cannot tell) is not exported as verified.
 */
export function sealProblem(entries: readonly Json[], seals: StoredChain['seals']): string | null {
  for (const [i, { seq, global, previousGlobal }] of seals.entries()) {
    const entry = entries[i];
    const hash = isJsonObject(entry) && typeof entry.hash === 'string' ? entry.hash : null;
    if (global === null) return `journal_damaged: journal_corrupt at seq ${seq}: the entry has no global seal`;
    if (hash === null || global !== globalHashOf(previousGlobal, seq, hash)) return `journal_damaged: journal_corrupt at seq ${seq}: the entry is not the one its global seal sealed`;
  }
  return null;
}

function parseBody(body: string): Json {
  try {
    const parsed: Json = JSON.parse(body);
    return parsed;
  } catch {
    return body;
  }
}

/**
 * The receipt the server would hand out for these entries (as `signReceipt` signs it), built from
 * the entries as stored: a tampered or unreadable entry is kept as it is, for the verifier to name.
 */
function signStored(effectId: string, entries: Json[], key: SigningKey): StoredReceipt {
  const last = entries.at(-1);
  const lastHash = isJsonObject(last) && typeof last.hash === 'string' ? last.hash : null;
  const signature = sign(null, Buffer.from(receiptSigningInput(effectId, lastHash, key.keyId), 'utf8'), key.privateKey).toString('base64url');
  return { v: RECEIPT_VERSION, effect_id: effectId, entries, signature, key_id: key.keyId };
}
