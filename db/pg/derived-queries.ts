import type { DerivedListOptions } from '../port/derived.ts';

// The derived tables' statements on PostgreSQL (db/pg/derived.ts). Keys are COLLATE "C" columns,
// so every comparison and ORDER BY on them goes by UTF-8 bytes, as SQLite's BINARY does. Sets of
// rows are passed as arrays and read by unnest: a batch writes its rows in one statement, not one
// statement a row.

/** A row as the table keeps it: the body its canonical JSON text. */
export interface StoredRow {
  ord: number;
  open: number;
  body: string;
}

/** A row with its view and key, as the statements over several rows answer it. */
export interface KeyedRow extends StoredRow {
  view: string;
  key: string;
}

const CURSOR = 'SELECT seq, global_hash AS "globalHash", size, version FROM derived_cursor WHERE id = 1';
const DIGESTS = 'SELECT view, sum, rows FROM derived_digests WHERE rows > 0 ORDER BY view';

/** Every statement of the derived tables but the lists, by what it does. */
export const DERIVED_SQL = {
  cursor: CURSOR,
  digests: DIGESTS,
  /** Moves the cursor only where it stands at `fromSeq` ($5); a writer that waited for the row's lock checks the seq it then finds. */
  moveCursor: 'UPDATE derived_cursor SET seq = $1, global_hash = $2, size = $3, version = $4 WHERE id = 1 AND seq = $5',
  /** From 0: the row inserted where there is none, or moved where it stands at 0. Either way the row is locked, and one writer alone moves it. */
  moveCursorFromZero: `INSERT INTO derived_cursor (id, seq, global_hash, size, version) VALUES (1, $1, $2, $3, $4)
    ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, global_hash = excluded.global_hash, size = excluded.size, version = excluded.version
    WHERE derived_cursor.seq = 0`,
  /** The cursor at 0 under a version, whatever it stood at: a reset writes it first, to hold the row's lock. */
  resetCursor: `INSERT INTO derived_cursor (id, seq, global_hash, size, version) VALUES (1, 0, NULL, 0, $1)
    ON CONFLICT (id) DO UPDATE SET seq = 0, global_hash = NULL, size = 0, version = excluded.version`,
  row: 'SELECT ord, open, body FROM derived_rows WHERE view = $1 AND key = $2',
  /** The rows under pairs of (view, key), by the primary key. */
  rowsOfPairs: 'SELECT view, key, ord, open, body FROM derived_rows WHERE (view, key) IN (SELECT * FROM unnest($1::text[], $2::text[]))',
  /** The rows of any of several views under any of several keys. */
  rowsOfKeys: 'SELECT view, key, ord, open, body FROM derived_rows WHERE view = ANY($1::text[]) AND key = ANY($2::text[])',
  putRows: `INSERT INTO derived_rows (view, key, ord, open, body) SELECT * FROM unnest($1::text[], $2::text[], $3::int8[], $4::int2[], $5::text[])
    ON CONFLICT (view, key) DO UPDATE SET ord = excluded.ord, open = excluded.open, body = excluded.body`,
  dropRows: 'DELETE FROM derived_rows WHERE (view, key) IN (SELECT * FROM unnest($1::text[], $2::text[]))',
  digestsOf: 'SELECT view, sum, rows FROM derived_digests WHERE view = ANY($1::text[])',
  putDigests: `INSERT INTO derived_digests (view, sum, rows) SELECT * FROM unnest($1::text[], $2::text[], $3::int8[])
    ON CONFLICT (view) DO UPDATE SET sum = excluded.sum, rows = excluded.rows`,
  /** A mark: its own row (view ''), then each view's digest as the batch left it, read in the batch's transaction. */
  mark: `INSERT INTO derived_marks (seq, view, sum, rows, global_hash)
    SELECT $1::int8, '', $2::text, 0, $3::text UNION ALL SELECT $1::int8, view, sum, rows, $3::text FROM derived_digests WHERE rows > 0`,
  marks: 'SELECT seq, view, sum, rows, global_hash AS "globalHash" FROM derived_marks ORDER BY seq, view',
  /** The newest mark's rows, its own first (view '' sorts first), in one statement: one moment's read. */
  newestMark: `SELECT seq, view, sum, rows, global_hash AS "globalHash" FROM derived_marks
    WHERE seq = (SELECT max(seq) FROM derived_marks WHERE view = '') ORDER BY view`,
  clear: ['DELETE FROM derived_rows', 'DELETE FROM derived_digests', 'DELETE FROM derived_marks'],
  /** A snapshot's first page, and the next after a (view, key): the primary key's order. */
  firstPage: 'SELECT view, key, ord, open, body FROM derived_rows ORDER BY view, key LIMIT $1',
  nextPage: 'SELECT view, key, ord, open, body FROM derived_rows WHERE (view, key) > ($1, $2) ORDER BY view, key LIMIT $3',
} as const;

/** A list statement and its values: the statement's text depends only on the options' shape, so it is prepared once per connection under its name. */
export interface ListQuery {
  name: string;
  text: string;
  values: unknown[];
}

/**
 * The page of one view's rows `options` select, in (ord, key) order either way: keyset bounds as
 * row comparisons, which the (view, ord, key) index seeks to, the ties on ord broken by key.
 */
export function listQuery(view: string, options: DerivedListOptions): ListQuery {
  const ascending = options.direction === 'asc';
  const values: unknown[] = [view];
  const where = ['view = $1'];
  const shape = [ascending ? 'asc' : 'desc'];
  if (options.open !== undefined) {
    values.push(options.open ? 1 : 0);
    where.push(`open = $${values.length}`);
    shape.push('open');
  }
  for (const [bound, past, word] of [
    [options.after, ascending ? '>' : '<', 'after'],
    [options.before, ascending ? '<' : '>', 'before'],
  ] as const) {
    if (bound === undefined) continue;
    values.push(bound.order, bound.key);
    where.push(`(ord, key) ${past} ($${values.length - 1}::int8, $${values.length}::text)`);
    shape.push(word);
  }
  values.push(options.limit);
  const way = ascending ? 'ASC' : 'DESC';
  const text = `SELECT key, ord, open, body FROM derived_rows WHERE ${where.join(' AND ')} ORDER BY ord ${way}, key ${way} LIMIT $${values.length}`;
  return { name: `derived_list_${shape.join('_')}`, text, values };
}
