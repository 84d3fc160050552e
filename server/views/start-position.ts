import type { Checkpoints } from '../../db/port/checkpoints.ts';
import { storedRowProblem } from '../integrity/checkpoint-row.ts';
import { type JournalHead, JournalCorruptError, type JournalStore } from '../journal/store.ts';
import type { SigningKey } from '../receipts/keys.ts';

/**
 * Where the views' follower starts: `zero` replays and verifies the whole journal; `checkpoint`
 * starts at the lower of the newest signed checkpoint and the derived tables' cursor, each checked
 * against the journal's seals first, so start-up verifies only the entries since the newest
 * checkpoint, and every entry past the tables' cursor still reaches the views. Every view is kept
 * in the derived tables and loads its open work from them, so every server the services build
 * starts at `checkpoint`; `zero` is for tools and tests with no key to hold a checkpoint against.
 */
export type StartFrom = 'zero' | 'checkpoint';

/** What a start at a checkpoint reads of the checkpoints, and the key their notes are signed with. */
export interface StartCheckpoints {
  store: Pick<Checkpoints, 'latest' | 'seqAtSize'>;
  key: Pick<SigningKey, 'keyId' | 'publicKeyPem'>;
}

/** Where the follower may start: the lower of `checkpoint` and `cursor`; null (seq 0) when either is missing. */
export function lowerStart(checkpoint: JournalHead | null, cursor: JournalHead | null): JournalHead | null {
  if (checkpoint === null || cursor === null) return null;
  return checkpoint.seq <= cursor.seq ? checkpoint : cursor;
}

/**
 * The newest checkpoint as a position of the journal, once it holds: its note verifies with the
 * key and its columns are what the note signed, and the seal stored at its last entry is the head
 * it signed. Null when there is none (or it covers no entry). Anything else is a corrupt journal,
 * refused as start-up refuses one. The entries before it are not read: rows removed or rewritten
 * there with the seals after them kept are the background pass's to find.
 */
export async function checkpointPosition(journal: Pick<JournalStore, 'sealAt'>, checkpoints: StartCheckpoints): Promise<JournalHead | null> {
  const row = await checkpoints.store.latest();
  if (row === null) return null;
  const refuse = (problem: string, seq = 0) => new JournalCorruptError(`the newest checkpoint ${problem}`, { seq, effectId: 'unknown' });
  const problem = storedRowProblem(row, checkpoints.key);
  if (problem !== null) throw refuse(problem);
  if (row.size === 0) return null;
  // A journal's seqs run 1, 2, ... with no gap: the seal at seq `size` is then the one to hold, read
  // at once. Only when it is not is the seq of the size-th entry looked for, which reads every row
  // before it (a journal with gaps, or one cut or rewritten: refused below).
  if ((await journal.sealAt(row.size)) === row.head) return { seq: row.size, size: row.size, globalHash: row.head };
  const seq = await checkpoints.store.seqAtSize(row.size);
  if (seq === null) throw refuse(`covers ${row.size} entries, but the journal holds fewer: entries were removed`);
  const sealed = await journal.sealAt(seq);
  if (sealed !== row.head) throw refuse(`signed the head ${row.head} at size ${row.size}, but the seal at seq ${seq} is ${sealed ?? 'missing'}: the journal was rewritten`, seq);
  return { seq, size: row.size, globalHash: row.head };
}

/**
 * The derived tables' cursor as a position of the journal, once the seal stored at its seq is
 * still its global hash (as the writer judged it at start); null at 0 or when it is not.
 */
export async function cursorPosition(journal: Pick<JournalStore, 'sealAt'>, cursor: JournalHead | null): Promise<JournalHead | null> {
  if (cursor === null || cursor.seq === 0) return null;
  return (await journal.sealAt(cursor.seq)) === cursor.globalHash ? cursor : null;
}

/**
 * Where a start at a checkpoint puts the follower: the lower of the newest checkpoint and the
 * tables' cursor as they were kept (`kept`), each checked against the seals; null (seq 0) when
 * either is missing. A checkpoint that does not hold is no place to start from: the whole journal
 * is replayed and verified instead, and start-up's check of the checkpoints
 * (server/integrity/checkpoints.ts) tells what is wrong with it, by its own code, and refuses the start.
 */
export async function checkpointStart(journal: Pick<JournalStore, 'sealAt'>, checkpoints: StartCheckpoints, kept: JournalHead | null): Promise<JournalHead | null> {
  let checkpoint: JournalHead | null;
  try {
    checkpoint = await checkpointPosition(journal, checkpoints);
  } catch (error) {
    if (!(error instanceof JournalCorruptError)) throw error;
    checkpoint = null;
  }
  return lowerStart(checkpoint, await cursorPosition(journal, kept));
}
