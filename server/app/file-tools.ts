import { StoreUnsupportedError } from '../../db/port/errors.ts';
import type { InterlockEnv } from '../config/env.ts';

// The operator's tools that copy the journal's SQLite file itself (a backup, a restore from a
// backup folder) have no PostgreSQL counterpart: PostgreSQL's own tools copy a database. Where
// DATABASE_URL keeps the journal in PostgreSQL they refuse, naming what to use instead, rather than
// open a file that is not the journal.

/** What an operator uses instead of a file backup of a PostgreSQL journal. */
export const PG_BACKUP_INSTEAD = "back up PostgreSQL with its own tools: pg_dump as the database's owner, or a base backup with WAL archiving (see docs/operators/postgresql.md)";

/**
 * Throw StoreUnsupportedError (code `store_unsupported`) when `env` keeps the journal in
 * PostgreSQL: `tool` works on the SQLite journal file only, and `instead` says what to use.
 */
export function refuseOnPostgres(env: Pick<InterlockEnv, 'databaseUrl'>, tool: string, instead: string): void {
  if (env.databaseUrl === null) return;
  throw new StoreUnsupportedError(`${tool} works on the SQLite journal file, and DATABASE_URL keeps this journal in PostgreSQL: ${instead}`);
}
