import type { EntryRow } from '../schema.ts';
import type { TailEntry, TailTables } from './journal-tail.ts';

/** Where a journal stands, read from its file: what a backup's manifest records. */
export interface JournalFigures {
  /** The journal's id (the origin of its checkpoints), null for a journal that has none yet. */
  journalId: string | null;
  /** EPOCH entries: the journal's epoch (0 before any restore). */
  epochs: number;
  /** Entries in the journal, and the seq of the last one (0 for none). */
  entries: number;
  lastSeq: number;
  /** The global chain's hash after the last entry, null for an empty journal. */
  globalHead: string | null;
  /** The wall time of the oldest DISPATCHED no entry has closed yet, null for none. */
  oldestOpenDispatchMs: number | null;
  /** The id of the newest signed checkpoint stored, 0 for none: an increment carries those after it. */
  newestCheckpointId: number;
}

/** The journal after a seq, read from one snapshot. */
export interface JournalTail {
  /** Where the journal stands in this snapshot. */
  figures: JournalFigures;
  /** The global hash at the seq read after (null for seq 0 or a seq the journal has no seal of). */
  anchor: string | null;
  tables: TailTables;
  /** The entries after that seq in seq order, in batches: memory holds one batch. */
  entries: AsyncIterable<readonly TailEntry[]>;
}

/** One chain as a receipt export reads it: its stored entry bodies in journal order, as stored (unparsed), each with its seals. */
export interface StoredChain {
  effectId: string;
  bodies: string[];
  /** For each body, in order: its seq, the global hash stored there and at the newest seq below it (null where there is none). */
  seals: Array<{ seq: number; global: string | null; previousGlobal: string | null }>;
}

/** One entry row of a chain that starts with a PROPOSED, with the seq of that chain's head. */
export interface HeadedRow {
  head: number;
  row: EntryRow;
}

/**
 * A journal file read on a connection of its own, read-only (the tools, the ledger CSV's worker):
 * a long read never holds the server's connection, and nothing is ever written to the file.
 */
export interface JournalFile {
  readonly location: string;
  /** Where the journal stands now. */
  figures(): Promise<JournalFigures>;
  /**
   * Every chain with an entry stamped in `[fromMs, toMs)`, in the order of its first such entry,
   * each cut after its last entry stamped before `toMs` and at `entriesMax` bodies (a longer one
   * gives `entriesMax + 1`, for the caller to refuse); all from one snapshot.
   */
  chainsInPeriod(period: { fromMs: number; toMs: number }, entriesMax: number): AsyncIterable<StoredChain>;
  /**
   * Every entry of every chain that starts with a PROPOSED, newest chain first and each chain's
   * entries in order, from one snapshot, in batches; memory holds one batch, however big the
   * journal. A row whose columns the schema does not allow is a JournalCorruptError.
   */
  chainsNewestFirst(): AsyncIterable<readonly HeadedRow[]>;
  /**
   * Copy the whole journal into `copy` (a file that exists, empty) as one consistent snapshot,
   * safe while a server writes; the copy is left as one file, nothing beside it.
   */
  backupTo(copy: string): Promise<void>;
  /**
   * Read the journal after `after.seq` from one snapshot (an incremental backup): `use` gets its
   * figures, the small tables (the checkpoints after `after.checkpointId` only) and the entries
   * with their seals, safe while a server writes.
   */
  readTail<T>(after: { seq: number; checkpointId: number }, use: (tail: JournalTail) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}
