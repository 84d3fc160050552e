import type { Entry } from '../../shared/entries.ts';
import type { JournalStore } from '../../server/journal/store.ts';
import type { GroupCommitOptions } from '../group-commit.ts';

export type { JournalStore } from '../../server/journal/store.ts';

/** What the journal of a process needs from it: the wall clock that stamps `ts_ms` and times claims, and how its commits settle. */
export interface JournalOptions {
  wallClockMs: () => number;
  groupCommit?: GroupCommitOptions;
}

/** The journal as the storage keeps it: the store the gate and the inbox use, and the import of entries sealed elsewhere. */
export interface StorageJournal extends JournalStore {
  /** Store entries sealed elsewhere (a fixture, an import), every hash and link checked; all or none. */
  appendSealed(sealed: readonly Entry[]): Promise<void>;
}
