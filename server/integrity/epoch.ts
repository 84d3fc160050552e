import { createPublicKey, sign, verify } from 'node:crypto';
import { EPOCH_CHAIN_ID, type EpochEntry, type EpochPrevious } from '../../shared/entries.ts';
import type { JsonObject } from '../../shared/json.ts';
import { canonical } from '../../shared/receipts/canonical.ts';
import type { JournalStore } from '../journal/store.ts';
import type { SigningKey } from '../receipts/keys.ts';
import { type Checkpoint, EMPTY_CHECKPOINT_HEAD, readCheckpoint, unverifiedCheckpoint } from './checkpoint.ts';
import { JournalDamagedError } from './damage.ts';

// Epochs: a restored journal is behind its mirrors by design, so a restore starts a new epoch.
// The epoch's first entry (EPOCH, on the journal's one epoch chain) names the last checkpoint of
// the old epoch that the mirrors hold and what the restore found in Stripe, signed with the
// receipt key. A journal is then held against a checkpoint of an earlier epoch only as far as
// that entry says: one past what it names means the restore hid entries, and is refused. Without
// the key no one can start an epoch, so a cut cannot be passed off as a restore.

const EPOCH_DOMAIN = 'interlock-epoch-v1';
const ORIGIN = /^interlock\/journal\/([0-9a-f]{16})\/epoch\/(0|[1-9][0-9]{0,8})$/;

/** The origin line of a journal's checkpoints in one epoch. */
export function originOf(journalId: string, epoch: number): string {
  return `interlock/journal/${journalId}/epoch/${epoch}`;
}

/** The journal id and epoch an origin names, or null for an origin that is not one of ours. */
export function parseOrigin(origin: string): { journalId: string; epoch: number } | null {
  const match = ORIGIN.exec(origin);
  return match === null ? null : { journalId: match[1] ?? '', epoch: Number(match[2]) };
}

/** What an EPOCH entry signs, apart from its signature. */
export type EpochFields = Pick<EpochEntry, 'epoch' | 'at_ms' | 'previous' | 'stripe' | 'key_id'>;

/** The bytes an epoch's signature covers: canonical JSON of the domain and every field but the signature. */
export function epochSigningInput(fields: EpochFields): string {
  return canonical([EPOCH_DOMAIN, fields.epoch, fields.at_ms, fields.previous, fields.stripe, fields.key_id]);
}

/** The journal's epochs as its entries say: the current one (0 before any restore) and each epoch's first entry. */
export interface Epochs {
  current: number;
  /** `starts[n - 1]` began epoch n. */
  starts: EpochEntry[];
}

/**
 * Read and check the journal's epoch entries: numbered 1, 2, … in order, each signed with the
 * receipt key, each naming (when it names one) a checkpoint of this journal's epoch before it
 * that verifies. Anything else is damage. With no key (an offline check given none), the
 * signatures go unchecked and the rest is checked as far as the entries themselves say.
 */
export async function readEpochs(journal: JournalStore, key: Pick<SigningKey, 'keyId' | 'publicKeyPem'> | null, journalId: string, databaseFile: string): Promise<Epochs> {
  const starts = (await journal.entries(EPOCH_CHAIN_ID)).filter((entry): entry is EpochEntry => entry.kind === 'EPOCH');
  starts.forEach((entry, i) => {
    const problem = epochProblem(entry, i + 1, key, journalId);
    if (problem !== null) throw new JournalDamagedError('epoch_invalid', `the entry that began epoch ${i + 1} ${problem}`, { databaseFile });
  });
  return { current: starts.length, starts };
}

function epochProblem(entry: EpochEntry, epoch: number, key: Pick<SigningKey, 'keyId' | 'publicKeyPem'> | null, journalId: string): string | null {
  if (entry.epoch !== epoch) return `says it began epoch ${entry.epoch}`;
  if (key !== null) {
    if (entry.key_id !== key.keyId) return `is signed with key ${entry.key_id}, not the receipt key ${key.keyId}`;
    const signed = verify(null, Buffer.from(epochSigningInput(entry), 'utf8'), createPublicKey(key.publicKeyPem), Buffer.from(entry.signature, 'base64url'));
    if (!signed) return 'does not verify with the receipt key: it was not written by a restore that held the key';
  }
  if (entry.previous === null) return null;
  let named: Checkpoint | null;
  if (key === null) named = unverifiedCheckpoint(entry.previous.note);
  else {
    const read = readCheckpoint(entry.previous.note, key);
    if (!read.ok) return `names a checkpoint that does not verify (${read.code})`;
    named = read.checkpoint;
  }
  if (named === null) return 'names a checkpoint that is not a checkpoint note';
  const { origin, size, head } = named;
  if (origin !== entry.previous.origin || size !== entry.previous.size || head !== entry.previous.head) return 'names a checkpoint other than the note it carries';
  if (origin !== originOf(journalId, epoch - 1)) return `names a checkpoint of ${origin}, not of this journal's epoch ${epoch - 1}`;
  return null;
}

/**
 * Start a new epoch, as a restore does: append its first entry, naming `previousNote` (the last
 * checkpoint of the current epoch that the mirrors hold, null when they hold none) and what the
 * restore found in Stripe, signed with the receipt key. The restore command is the operators';
 * this is the entry it writes.
 */
export async function startEpoch(options: {
  journal: JournalStore;
  key: SigningKey;
  journalId: string;
  previousNote: string | null;
  stripe: JsonObject;
  atMs: number;
}): Promise<EpochEntry> {
  const { journal, key, journalId } = options;
  const epoch = (await journal.entries(EPOCH_CHAIN_ID)).length + 1;
  let previous: EpochPrevious | null = null;
  if (options.previousNote !== null) {
    const read = readCheckpoint(options.previousNote, key);
    if (!read.ok) throw new Error(`the checkpoint to name does not verify with the receipt key: ${read.code}: ${read.message}`);
    if (read.checkpoint.origin !== originOf(journalId, epoch - 1)) throw new Error(`the checkpoint to name is of ${read.checkpoint.origin}, not of this journal's epoch ${epoch - 1}`);
    previous = { ...read.checkpoint, note: options.previousNote };
  }
  const fields: EpochFields = { epoch, at_ms: options.atMs, previous, stripe: options.stripe, key_id: key.keyId };
  const signature = sign(null, Buffer.from(epochSigningInput(fields), 'utf8'), key.privateKey).toString('base64url');
  return journal.append('EPOCH', EPOCH_CHAIN_ID, { ...fields, signature });
}

/** The journal as it is held against a checkpoint. */
export interface HeldJournal {
  journalId: string;
  size: number;
  epochs: Epochs;
  /** The global hash after the first `size` entries, null when it has fewer. */
  globalHashAtSize(size: number): Promise<string | null>;
  seqAtSize(size: number): Promise<number | null>;
}

/**
 * The damage a verified checkpoint shows in the journal, null for none. Of the current epoch: the
 * journal must hold everything it covers, with the chain it signed. Of an earlier epoch: it must
 * not go past the checkpoint the next epoch's entry names (at its size, be that one). Of a later
 * epoch: the entry that began it was removed.
 */
export async function checkpointDamage(checkpoint: Checkpoint, journal: HeldJournal, source: string, databaseFile: string): Promise<JournalDamagedError | null> {
  const origin = parseOrigin(checkpoint.origin);
  const current = journal.epochs.current;
  if (origin === null || origin.journalId !== journal.journalId) {
    return new JournalDamagedError('journal_inconsistent_with_checkpoint', `the newest checkpoint in ${source} is of ${checkpoint.origin}, not of this journal (${originOf(journal.journalId, current)})`, { databaseFile });
  }
  if (origin.epoch > current) {
    return new JournalDamagedError('journal_behind_checkpoint', `the newest checkpoint in ${source} is of epoch ${origin.epoch} and the journal is in epoch ${current}: the entry that began epoch ${origin.epoch} was removed`, { databaseFile });
  }
  if (origin.epoch < current) {
    const named = journal.epochs.starts[origin.epoch]?.previous ?? null;
    const nextEpoch = origin.epoch + 1;
    if (named === null || checkpoint.size > named.size) {
      const says = named === null ? 'names no checkpoint of it' : `names the one at ${named.size} entries`;
      return new JournalDamagedError('journal_behind_checkpoint', `the newest checkpoint in ${source} covers ${checkpoint.size} entries of epoch ${origin.epoch}, and the entry that began epoch ${nextEpoch} ${says}: the restore left out entries it knew of`, { databaseFile });
    }
    if (checkpoint.size === named.size && checkpoint.head !== named.head) {
      return new JournalDamagedError('journal_inconsistent_with_checkpoint', `the newest checkpoint in ${source} is not the one the entry that began epoch ${nextEpoch} names, at the same size`, { databaseFile });
    }
    return null;
  }
  if (checkpoint.size > journal.size) {
    return new JournalDamagedError('journal_behind_checkpoint', `the newest checkpoint in ${source} covers ${checkpoint.size} entries and the journal holds ${journal.size}: entries were removed from its end`, { databaseFile });
  }
  if (checkpoint.size === 0 && checkpoint.head !== EMPTY_CHECKPOINT_HEAD) {
    return new JournalDamagedError('journal_inconsistent_with_checkpoint', `the newest checkpoint in ${source} covers no entries but signed a head other than the empty one: it was not made by Interlock`, { databaseFile });
  }
  if (checkpoint.size > 0 && (await journal.globalHashAtSize(checkpoint.size)) !== checkpoint.head) {
    const site = { seq: (await journal.seqAtSize(checkpoint.size)) ?? 0, effectId: 'unknown' };
    return new JournalDamagedError('journal_inconsistent_with_checkpoint', `the global chain after ${checkpoint.size} entries is not the one the newest checkpoint in ${source} signed: the journal was rewritten`, { site, databaseFile });
  }
  return null;
}
