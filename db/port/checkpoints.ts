import type { StoredCheckpoint } from '../journal-checkpoints.ts';

export type { StoredCheckpoint } from '../journal-checkpoints.ts';

/** The signed checkpoints of the journal's global chain, kept apart from the entries, and the journal's id. */
export interface Checkpoints {
  latest(): StoredCheckpoint | null;
  all(): StoredCheckpoint[];
  add(checkpoint: Omit<StoredCheckpoint, 'id'>): boolean;
  journalId(): string | null;
  ensureJournalId(): string;
  globalHashAtSize(size: number, dense?: boolean): string | null;
  seqAtSize(size: number): number | null;
}
