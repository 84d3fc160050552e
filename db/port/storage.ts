import type { BudgetLeaseStore } from '../budget-lease-rules.ts';
import type { SqliteGrants } from '../grants.ts';
import type { CheckpointStore } from '../journal-checkpoints.ts';
import type { GuardProblem } from '../journal-guards.ts';
import type { SqliteSessions } from '../session-store.ts';
import type { JournalOptions, StorageJournal } from './journal.ts';
import type { SealOutcome } from '../journal-seals.ts';

export type { GuardProblem } from '../journal-guards.ts';
export type { SealOutcome } from '../journal-seals.ts';

/** The checks start-up runs on the stored rows themselves, before any entry is replayed. */
export interface StoredIntegrity {
  /** The schema's guards (append-only triggers, unique indexes) that are missing or changed. */
  guardProblems(): Promise<GuardProblem[]>;
  /** A row stored below seq 1, where a replay from the start never reads it; null for none. */
  rowOutsideTheOrder(): Promise<{ seq: number; effectId: string } | null>;
  /** True when the journal has entries and no global chain: one an earlier Interlock wrote. */
  needsSealing(): Promise<boolean>;
  /** Seal such a journal after verifying it and copying it to `backupFile` (SealRefusedError when it may not be). */
  sealUnsealed(backupFile: string): Promise<SealOutcome>;
}

/**
 * Everything Interlock keeps, as one port: the journal, people's sessions, approval grants, the
 * signed checkpoints, the Stripe budget's slots, the integrity checks on the stored rows. No member
 * hands out a connection or a prepared statement; what a backend needs stays inside it.
 */
export interface Storage {
  /** Where it is, as an operator names it: the journal's file (`:memory:` for none). */
  readonly location: string;
  /** The journal, on this process's clock; made once per process. */
  journal(options: JournalOptions): StorageJournal;
  // Sessions, grants, checkpoints and budget slots are typed by their stores' own shapes here.
  sessions: Pick<SqliteSessions, 'load' | 'save'>;
  /** Approval grants, judged on `nowMs`. */
  grants(nowMs: () => number): Pick<SqliteGrants, 'grant' | 'revoke' | 'describe' | 'see'>;
  checkpoints: CheckpointStore;
  /** The Stripe budget's slots shared with every process on this storage; null where no other process can reach it (in memory). */
  budgetSlots: BudgetLeaseStore | null;
  integrity: StoredIntegrity;
  close(): Promise<void>;
}
