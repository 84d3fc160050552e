import { unreadableFileError } from '../../db/sqlite-storage.ts';
import type { JournalCorruptError } from '../journal/store.ts';
import { toolCommand } from '../tools.ts';

// What start-up says when the journal cannot be trusted: one error, one line, naming the entry,
// what is wrong with it and what the operator does next. main.ts prints it and exits 2.

/** Why start-up refused a journal: a closed list, so a log search or an alert can match on it. */
export const JOURNAL_DAMAGE_CODES = [
  /** A stored entry fails its hash, its shape, its chain or the global chain. */
  'journal_corrupt',
  /** An append-only trigger or a unique index of the journal is missing or not the one its migration made. */
  'journal_guard_missing',
  /** The journal has fewer entries than a checkpoint signed for it (the store's or a mirror's). */
  'journal_behind_checkpoint',
  /** The journal's global chain is not the one a checkpoint signed for it. */
  'journal_inconsistent_with_checkpoint',
  /** A checkpoint kept for this journal does not verify with the receipt key. */
  'checkpoint_invalid',
  /** An entry that began an epoch is out of order, not signed with the receipt key, or names a checkpoint that does not hold. */
  'epoch_invalid',
] as const;

export type JournalDamageCode = (typeof JOURNAL_DAMAGE_CODES)[number];

/** Where the damage is, when it is at one entry. */
export interface DamageSite {
  seq: number;
  effectId: string;
}

/** What every damage message ends with: the two ways forward. */
export function damageAdvice(databaseFile: string): string {
  // The verify tool reads a SQLite file; a PostgreSQL database (named by its URL) is restored with PostgreSQL's own tools.
  if (/^postgres(ql)?:\/\//.test(databaseFile)) return `restore the database ${databaseFile} from its backup (pg_restore, or a base backup and its WAL), see docs/operators/postgresql.md`;
  return `restore the database from a backup, or locate the damage with \`${toolCommand('verify', `--journal ${databaseFile}`)}\``;
}

/** The journal cannot be trusted; nothing is served from it. `message` is the one line to print. */
export class JournalDamagedError extends Error {
  readonly code: JournalDamageCode;
  readonly site: DamageSite | null;

  constructor(code: JournalDamageCode, what: string, options: { site?: DamageSite | null; databaseFile: string }) {
    const site = options.site ?? null;
    const where = site === null ? '' : ` at seq ${site.seq} (effect ${site.effectId})`;
    super(`journal damaged${where}: ${what}; ${damageAdvice(options.databaseFile)}`);
    this.code = code;
    this.site = site;
  }

  /** The same failure told as start-up tells it, from the check that met it. */
  static fromCorrupt(corrupt: JournalCorruptError, databaseFile: string): JournalDamagedError {
    return new JournalDamagedError('journal_corrupt', corrupt.message, { site: { seq: corrupt.seq, effectId: corrupt.effectId }, databaseFile });
  }
}

/**
 * The damage the storage's engine itself reports (SQLite: a file that is not a database, or whose
 * pages are broken), as bytes written over the file leave it. Null for any other error, which is
 * not the journal's.
 */
export function unreadableDatabaseDamage(error: unknown, databaseFile: string): JournalDamagedError | null {
  const damage = unreadableFileError(error);
  if (damage === null) return null;
  return new JournalDamagedError('journal_corrupt', `the database file cannot be read by SQLite (${damage.code}: ${damage.said}): its bytes were overwritten or damaged`, { databaseFile });
}
