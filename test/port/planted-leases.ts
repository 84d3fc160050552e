import { ACQUIRE_SQL } from '../../db/leases.ts';
import { PG_ACQUIRE_SQL } from '../../db/pg/leases.ts';

// Planted bad take-or-renew statements, for SQLite (named parameters) and PostgreSQL ($1..$3): the
// leases contract must fail on a store that runs one.

const EPOCH_SET = 'epoch = CASE WHEN work_leases.holder = excluded.holder THEN work_leases.epoch ELSE work_leases.epoch + 1 END,';

/** Keeps the epoch when the lease changes holder: two holders in turn hold it at one epoch. */
export const STICKY_EPOCH_ACQUIRE_SQL = replaced(ACQUIRE_SQL, EPOCH_SET, 'epoch = work_leases.epoch,');

/** Takes the lease whoever holds it, expired or not (the epoch still grows). */
export const GREEDY_ACQUIRE_SQL = cut(ACQUIRE_SQL);

/** As PG_ACQUIRE_SQL, but the epoch stays put when the lease changes holder. */
export const PG_STICKY_EPOCH_ACQUIRE_SQL = replaced(PG_ACQUIRE_SQL, EPOCH_SET, 'epoch = work_leases.epoch,');

/** As PG_ACQUIRE_SQL, but it takes the lease whoever holds it, expired or not. */
export const PG_GREEDY_ACQUIRE_SQL = cut(PG_ACQUIRE_SQL);

/** The statement without its WHERE: the upsert always updates. */
function cut(sql: string): string {
  const without = sql.replace(/\nWHERE [^\n]*\n/, '\n');
  if (without === sql) throw new Error('the planted statement no longer finds its WHERE');
  return without;
}

/** `sql` with `from` replaced by `to`; a statement that no longer has `from` is refused, so the plant cannot silently plant nothing. */
function replaced(sql: string, from: string, to: string): string {
  if (!sql.includes(from)) throw new Error(`the planted statement no longer finds: ${from}`);
  return sql.replace(from, to);
}
