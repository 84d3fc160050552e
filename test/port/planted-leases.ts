import { ACQUIRE_SQL, TAKE_OVER_SQL } from '../../db/leases.ts';
import { PG_ACQUIRE_SQL, PG_TAKE_OVER_SQL } from '../../db/pg/leases.ts';

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

/** Takes a lease over from whoever holds it, live or given back, not only from the holder read. */
export const GREEDY_TAKE_OVER_SQL = replaced(TAKE_OVER_SQL, ' AND holder = $fromHolder AND epoch = $fromEpoch', ' AND $fromHolder IS NOT NULL AND $fromEpoch IS NOT NULL');

/** As PG_TAKE_OVER_SQL, but from whoever holds the lease. */
export const PG_GREEDY_TAKE_OVER_SQL = replaced(PG_TAKE_OVER_SQL, ' AND holder = $4 AND epoch = $5', ' AND $4::text IS NOT NULL AND $5::int8 IS NOT NULL');

/** The names of the take-over's cases, which a store taking a live holder's lease fails. */
export const TAKE_OVER_CASES = [
  'a lease is taken over only from the holder and epoch it is held at, at once and at the next epoch; the old holder then fails its check',
  "servers taking over one dead holder's lease at once: one of them takes it",
] as const;

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
