import type { GuardProblem } from '../journal-guards.ts';
import type { BudgetSlotStore } from './budget-slots.ts';
import type { Checkpoints } from './checkpoints.ts';
import type { DerivedTables } from './derived.ts';
import type { Grants } from './grants.ts';
import type { Leases } from './leases.ts';
import type { LoginThrottles } from './login-throttles.ts';
import type { Sessions } from './sessions.ts';
import type { Signals } from './signals.ts';
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
  /** Copy the whole database to `backupFile` as it stands (SQLite's online backup): before a change start-up makes to it. */
  backupTo(backupFile: string): Promise<void>;
}

/**
 * Everything Interlock keeps, as one port: the journal, people's sessions, approval grants, the
 * signed checkpoints, the Stripe budget's slots, the background-work leases, the login throttles' counts, the signals between servers, the integrity checks on the stored rows. No member
 * hands out a connection or a prepared statement; what a backend needs stays inside it.
 */
export interface Storage {
  /** Where it is, as an operator names it: the journal's file (`:memory:` for none), or the database's URL without its password. */
  readonly location: string;
  /** What keeps it: a tool that reads or copies the journal's file works on `sqlite` only. */
  readonly engine: 'sqlite' | 'postgresql';
  /** The journal, on this process's clock; made once per process. */
  journal(options: JournalOptions): StorageJournal;
  /** People's sessions, read through by every process (server/sessions/sessions.ts). */
  sessions: Sessions;
  /** Approval grants, judged on `nowMs`. */
  grants(nowMs: () => number): Grants;
  /** The signed checkpoints, the journal's id and the seals they are checked against. */
  checkpoints: Checkpoints;
  /** The Stripe budget's slots shared with every process on this storage; null where no other process can reach it (in memory). */
  budgetSlots: BudgetSlotStore | null;
  /** Background-work leases shared with every server on this storage (db/port/leases.ts); in memory where no other process can reach it. */
  leases: Leases;
  /** The login throttles' counts (db/port/login-throttles.ts): shared by every server on PostgreSQL, this process's own on SQLite. */
  loginThrottles: LoginThrottles;
  /** The views' derived tables, with their cursor and digests (db/port/derived.ts); read-only storage refuses their writes. */
  derived: DerivedTables;
  /** Signals to the other servers on this storage (db/port/signals.ts): between servers on PostgreSQL, inside the process elsewhere. */
  signals: Signals;
  integrity: StoredIntegrity;
  close(): Promise<void>;
}
