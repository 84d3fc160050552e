/** A checkpoint as the store keeps it. */
export interface StoredCheckpoint {
  id: number;
  epoch: number;
  size: number;
  head: string;
  note: string;
  signedAtMs: number;
}

/** The store could not read the journal's id: its table was removed or changed. */
export class JournalIdUnreadableError extends Error {
  override readonly name = 'JournalIdUnreadableError';
}

/**
 * The store's side of the signed checkpoints: the notes, apart from the entries; the journal's id,
 * which names the journal in every checkpoint's origin; and the seal reads a checkpoint is held
 * against.
 */
export interface Checkpoints {
  /** The newest checkpoint, or null for none yet. */
  latest(): Promise<StoredCheckpoint | null>;
  /** Every checkpoint, oldest first. */
  all(): Promise<StoredCheckpoint[]>;
  /**
   * Keep a checkpoint, only if it is larger than the newest one of its epoch, checked and written
   * in one transaction: processes on one journal sign as their views catch up, and one a step
   * behind never follows one ahead. True when kept.
   */
  add(checkpoint: Omit<StoredCheckpoint, 'id'>): Promise<boolean>;
  /**
   * The journal's id, or null when it has none (a journal from before checkpoints, or one whose id
   * was removed). Rejects with `JournalIdUnreadableError` when the id cannot be read at all.
   */
  journalId(): Promise<string | null>;
  /** Give the journal an id, once; the id it has if another process gave it one first. */
  ensureJournalId(): Promise<string>;
  /**
   * The global hash after the first `size` entries, from the seals (null when the journal has
   * fewer). `dense`: the caller knows the journal's seqs run 1, 2, … with no gap, so the
   * `size`-th entry is seq `size`.
   */
  globalHashAtSize(size: number, dense?: boolean): Promise<string | null>;
  /** The seq of the `size`-th entry (0 for size 0), null when the journal has fewer. */
  seqAtSize(size: number): Promise<number | null>;
}
