import type { GrantRow } from '../schema.ts';
import type { StoredCheckpoint } from './checkpoints.ts';

// What an incremental backup carries and how a restore lays it on a copy: the journal's entries
// and seals after a seq, and the small tables a restore needs in full (the journal's facts, its
// checkpoints, the grants). People's sessions and the Stripe budget's slots are not carried: a
// restore starts without them, as a full one does.

/** One entry after the backup point as stored: its row, as the journal holds it, and its seal. */
export interface TailEntry {
  seq: number;
  effectId: string;
  kind: string;
  prev: string | null;
  hash: string;
  closes: number;
  tsMs: number;
  body: string;
  reserves: string | null;
  /** The global chain's hash at this entry (its row of the seals). */
  globalHash: string;
}

/** The small tables, carried whole by every increment. */
export interface TailTables {
  /** The journal's facts by name (its id). */
  meta: { name: string; value: string }[];
  /** The signed checkpoints stored after the base's newest (every one for a base that does not say), oldest first. */
  checkpoints: StoredCheckpoint[];
  /** Every grant, as stored. */
  grants: GrantRow[];
}

/**
 * A journal copy that an increment is laid on (a restore's scratch file, never a served journal):
 * entries appended as they were stored, seals with them, and the small tables brought to the
 * increment's. The copy is migrated to this Interlock's schema when opened.
 */
export interface JournalCopy {
  /** The copy's last seq, its global head (null for none), its entry count, and its newest checkpoint's id (0 for none). */
  head(): Promise<{ lastSeq: number; globalHead: string | null; entries: number; newestCheckpointId: number }>;
  /** Append entries and their seals in one transaction, as stored (the journal's guards still hold). */
  appendEntries(entries: readonly TailEntry[]): Promise<void>;
  /**
   * Bring the small tables to `tables`: facts set, grants replaced, checkpoints the copy lacks
   * added. A checkpoint the copy holds under the same id with other contents is refused
   * (`CopyTablesError`): checkpoints are never changed.
   */
  putTables(tables: TailTables): Promise<void>;
  close(): Promise<void>;
}

/** The small tables of an increment disagree with the copy's (a checkpoint rewritten). */
export class CopyTablesError extends Error {
  override readonly name = 'CopyTablesError';
}
