import type pg from 'pg';
import { entryRowOfTuple, type NewEntryRow } from '../journal-rules.ts';
import type { EntryRow } from '../schema.ts';

// The journal's statements on PostgreSQL, each prepared once per connection (by its name) and
// read as tuples in the column order of `entries`, which entryRowOfTuple checks as SQLite's are.

const COLUMNS = 'seq, effect_id, kind, prev, hash, closes, ts_ms, body, reserves';
const E_COLUMNS = 'e.seq, e.effect_id, e.kind, e.prev, e.hash, e.closes, e.ts_ms, e.body, e.reserves';

/** A DISPATCHED is open while no closing entry of its effect has a higher seq. */
const OPEN = 'NOT EXISTS (SELECT 1 FROM entries AS l WHERE l.effect_id = e.effect_id AND l.closes = 1 AND l.seq > e.seq)';

export const SQL = {
  head: 'SELECT seq, global_hash, size FROM journal_head WHERE id = 1',
  /** The lock every write takes with its first statement: writers of every process queue here. */
  lockHead: 'SELECT seq, global_hash, size FROM journal_head WHERE id = 1 FOR UPDATE',
  moveHead: 'UPDATE journal_head SET seq = $1, global_hash = $2, size = $3 WHERE id = 1',
  chain: `SELECT ${COLUMNS} FROM entries WHERE effect_id = $1 ORDER BY seq`,
  last: `SELECT ${COLUMNS} FROM entries WHERE effect_id = $1 ORDER BY seq DESC LIMIT 1`,
  insert: `INSERT INTO entries (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
  // One upsert that states claimIsFree in SQL: a row is written exactly when there was no claim,
  // or the same owner holds it, or it expired at or before now.
  takeClaim: `INSERT INTO claims (effect_id, owner, expires_ms) VALUES ($1, $2, $3)
    ON CONFLICT (effect_id) DO UPDATE SET owner = excluded.owner, expires_ms = excluded.expires_ms
    WHERE claims.owner = excluded.owner OR claims.expires_ms <= $4`,
  putClaim: `INSERT INTO claims (effect_id, owner, expires_ms) VALUES ($1, $2, $3)
    ON CONFLICT (effect_id) DO UPDATE SET owner = excluded.owner, expires_ms = excluded.expires_ms`,
  dropClaim: 'DELETE FROM claims WHERE effect_id = $1 AND owner = $2',
  openDispatches: `SELECT ${E_COLUMNS} FROM entries AS e WHERE e.kind = 'DISPATCHED' AND ${OPEN} ORDER BY e.seq`,
  openReservations: `SELECT ${E_COLUMNS} FROM entries AS e WHERE e.reserves = $1 AND ${OPEN} ORDER BY e.seq`,
  reservationSeq: 'SELECT max(seq) FROM entries WHERE reserves = $1',
  reservedSince: 'SELECT 1 FROM entries WHERE reserves = $1 AND seq > $2 AND effect_id <> $3 LIMIT 1',
  insertSeal: 'INSERT INTO journal_seals (seq, global_hash) VALUES ($1, $2)',
  sealsBetween: 'SELECT seq, global_hash FROM journal_seals WHERE seq > $1 AND seq <= $2 ORDER BY seq',
  sealAt: 'SELECT global_hash FROM journal_seals WHERE seq = $1',
  sealBelow: 'SELECT global_hash FROM journal_seals WHERE seq < $1 ORDER BY seq DESC LIMIT 1',
  // The (effect_id, seq) index answers each chain's count and last seq.
  chainEnds: `SELECT ${E_COLUMNS}, g.n FROM
    (SELECT effect_id, max(seq) AS last, count(*) AS n FROM entries WHERE effect_id = ANY($1::text[]) AND seq <= $2 GROUP BY effect_id) AS g
    JOIN entries AS e ON e.seq = g.last`,
  // What a batch of writes reads under the lock, in one statement (db/pg/journal-batch.ts): tag 0,
  // the chains of $1 in seq order; tag 1, the newest row of each of $2; tag 2, the ordinal of each
  // guard ($3, $4, $5: key, after seq, effect) that another effect's row reserved since.
  prefetch: `SELECT 0 AS tag, ${COLUMNS} FROM entries WHERE effect_id = ANY($1::text[])
    UNION ALL
    SELECT 1, l.* FROM unnest($2::text[]) AS k(id) CROSS JOIN LATERAL
      (SELECT ${COLUMNS} FROM entries WHERE effect_id = k.id ORDER BY seq DESC LIMIT 1) AS l
    UNION ALL
    SELECT 2, g.i, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
      FROM unnest($3::text[], $4::int8[], $5::text[]) WITH ORDINALITY AS g(key, after_seq, effect_id, i)
      WHERE EXISTS (SELECT 1 FROM entries AS r WHERE r.reserves = g.key AND r.seq > g.after_seq AND r.effect_id <> g.effect_id)
    ORDER BY 1, 2`,
  // A batch's rows, seals and claims in one statement: entries ($1-$9) and seals ($10, $11) as
  // columns, claims set ($12-$14) and dropped ($15, $16: a null owner drops whoever holds it).
  flush: `WITH e AS (INSERT INTO entries (${COLUMNS})
      SELECT * FROM unnest($1::int8[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int2[], $7::int8[], $8::text[], $9::text[])),
    s AS (INSERT INTO journal_seals (seq, global_hash) SELECT * FROM unnest($10::int8[], $11::text[])),
    p AS (INSERT INTO claims (effect_id, owner, expires_ms) SELECT * FROM unnest($12::text[], $13::text[], $14::int8[])
      ON CONFLICT (effect_id) DO UPDATE SET owner = excluded.owner, expires_ms = excluded.expires_ms),
    d AS (DELETE FROM claims AS c USING unnest($15::text[], $16::text[]) AS x(effect_id, owner)
      WHERE c.effect_id = x.effect_id AND (x.owner IS NULL OR c.owner = x.owner))
    SELECT 1`,
  // A scan's rows and their seals in one statement, so one snapshot: tag 0, the rows after $1 (at
  // most $2), in seq order; tag 1, the seals over them (after $1, through the last row's seq).
  scan: `WITH r AS (SELECT ${COLUMNS} FROM entries WHERE seq > $1 ORDER BY seq LIMIT $2)
    SELECT 0 AS tag, r.*, NULL::text AS global_hash FROM r
    UNION ALL
    SELECT 1, s.seq, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, s.global_hash FROM journal_seals AS s
      WHERE s.seq > $1 AND s.seq <= (SELECT max(seq) FROM r)
    ORDER BY 1, 2`,
  // A write's new head, with the signal to the other servers that the journal moved ($4, $5): a
  // NOTIFY is sent at COMMIT only, so the write and its signal need one round trip together.
  // (A data-modifying WITH runs whether or not the SELECT reads it.)
  moveHeadAndNotify: 'WITH m AS (UPDATE journal_head SET seq = $1, global_hash = $2, size = $3 WHERE id = 1) SELECT pg_notify($4, $5)',
  // One chain's rows in seq order, each with its own seal and the newest seal below it, in one
  // statement (db/journal-seal-reads.ts sealedChainOf reads nothing else).
  sealedChain: `SELECT ${E_COLUMNS}, s.global_hash,
      (SELECT b.global_hash FROM journal_seals AS b WHERE b.seq < e.seq ORDER BY b.seq DESC LIMIT 1)
    FROM entries AS e LEFT JOIN journal_seals AS s ON s.seq = e.seq WHERE e.effect_id = $1 ORDER BY e.seq`,
  // A key's reservations in one statement, so one snapshot: tag 0, its open DISPATCHED rows in seq
  // order; tag 1, the highest seq that reserved it (null for none).
  reservations: `SELECT 0 AS tag, ${E_COLUMNS} FROM entries AS e WHERE e.reserves = $1 AND ${OPEN}
    UNION ALL
    SELECT 1, max(seq), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM entries WHERE reserves = $1
    ORDER BY 1, 2`,
  effectIdsAfter: 'SELECT DISTINCT effect_id FROM entries WHERE effect_id > $1 ORDER BY effect_id LIMIT $2',
  after: `SELECT ${COLUMNS} FROM entries WHERE seq > $1 ORDER BY seq LIMIT $2`,
} as const;

export type Statement = keyof typeof SQL;

/** The lock every write takes, sent with the BEGIN of its transaction in one round trip. */
export const BEGIN_AND_LOCK_HEAD = `BEGIN ISOLATION LEVEL READ COMMITTED; ${SQL.lockHead}`;

/** Run a statement by name, prepared on the connection the first time, its rows as tuples. */
export async function run(client: pg.ClientBase, name: Statement, values: unknown[] = []): Promise<pg.QueryArrayResult> {
  return client.query({ name: `interlock_${name}`, text: SQL[name], values, rowMode: 'array' });
}

/** The rows of a statement that selects entries, checked as SQLite's are. */
export async function entryRows(client: pg.ClientBase, name: Statement, values: unknown[]): Promise<EntryRow[]> {
  return (await run(client, name, values)).rows.map(entryRowOfTuple);
}

/** The values of `insert` for a row at `seq`. */
export function insertValues(seq: number, row: NewEntryRow): unknown[] {
  return [seq, row.effectId, row.kind, row.prev, row.hash, row.closes, row.tsMs, row.body, row.reserves];
}
