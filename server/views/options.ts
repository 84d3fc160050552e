import type { DerivedTables } from '../../db/port/derived.ts';
import type { ConfigReloadsView } from '../config/reloads.ts';
import type { Entry } from '../../shared/entries.ts';
import type { InboxView } from '../inbox/view.ts';
import type { JournalStore } from '../journal/store.ts';
import type { LedgerView } from '../ledger/view.ts';
import type { OutboxView } from '../outbox/view.ts';
import type { ScoreboardView } from '../scoreboard/view.ts';
import type { StartCheckpoints, StartFrom } from './start-position.ts';

/**
 * The waits before each retry of a catch-up that found the database busy (another process
 * holding a lock past the busy timeout, a checkpoint); after the last one the failure counts.
 */
export const BUSY_RETRY_DELAYS_MS: readonly number[] = [50, 100, 200];

/** What the views log: pino's (and so Fastify's) `(fields, message)` calls. */
export interface ViewsLog {
  fatal(fields: object, message: string): void;
  error(fields: object, message: string): void;
  info?(fields: object, message: string): void;
}

export interface ViewsOptions {
  journal: JournalStore;
  inboxName: string;
  /** The application clock, for the live feed's messages. */
  nowMs: () => number;
  log: ViewsLog;
  busyRetryDelaysMs?: readonly number[];
  sleep?: (ms: number) => Promise<void>;
  /** The derived tables the table-backed views are kept in; tables of their own in memory when absent. */
  derived?: DerivedTables;
  /** The version of the folds the tables are written under (server/views/version.ts). */
  version?: string;
  /** Where the follower starts at `replayAtStart` (server/views/start-position.ts): `zero` unless told. */
  startFrom?: StartFrom;
  /** The checkpoints a start at one is held against; without them a start is from zero. */
  checkpoints?: StartCheckpoints;
  /** Chains' tails the follower holds at most (server/live/follower.ts). */
  tailsHeldMax?: number;
}

/** The views caught up with the journal: read them now, do not keep them (the next read catches up again). */
export interface CaughtUp {
  /** The inbox: open work in memory, history read from its derived table. */
  inbox: InboxView;
  /** The scoreboard, read from its derived tables. */
  scoreboard: ScoreboardView;
  /** One row per request, for finance's ledger, read from its derived table. */
  ledger: LedgerView;
  /** The outbox's open work (messages owed, items' contexts for wording them), its history read from its derived tables. */
  outbox: OutboxView;
  /** The config's reloads while running, read from their derived table (server/config/reloads.ts). */
  configReloads: ConfigReloadsView;
  /** The last journal sequence number they include. */
  seq: number;
  /**
   * One chain as the views verified it, for showing or signing: read from the journal, cut at
   * the last entry the views applied, and only when that entry is still the one they verified
   * (rows changed since are a corrupt journal, never shown). Empty for a chain they have not seen.
   */
  chain(effectId: string): Promise<Entry[]>;
}
