-- The views' derived tables (db/port/derived.ts), as SQLite's (db/migrations/0014_derived_tables.sql):
-- a cache of a fold of the journal, rebuilt from it whenever missing. Bodies are `text`, the
-- canonical JSON exactly as written (a row's hash is taken over it as it is); views and keys
-- compare byte by byte (COLLATE "C"), so lists and snapshot pages order as on SQLite.

-- Where the tables stand: one row (id 1), the journal entry they include through, with the global
-- hash there and the folds' version. Absent until the tables are first built. Every batch and
-- every reset writes this row first, so its lock orders the writers of every process.
CREATE TABLE derived_cursor (
	id int2 PRIMARY KEY,
	seq int8 NOT NULL,
	global_hash text COLLATE "C",
	size int8 NOT NULL,
	version text COLLATE "C" NOT NULL,
	CONSTRAINT derived_cursor_one_row CHECK (id = 1)
);

-- Each view's digest: the sum mod 2^256 of its rows' hashes (64 hex digits), and its rows.
CREATE TABLE derived_digests (
	view text COLLATE "C" PRIMARY KEY,
	sum text COLLATE "C" NOT NULL,
	rows int8 NOT NULL
);

-- The digests recorded with the cursor every 10,000 entries: a row per view, and one of view ''
-- for the mark itself (so a mark with no view's rows is kept too).
CREATE TABLE derived_marks (
	seq int8 NOT NULL,
	view text COLLATE "C" NOT NULL,
	sum text COLLATE "C" NOT NULL,
	rows int8 NOT NULL,
	global_hash text COLLATE "C",
	PRIMARY KEY (seq, view)
);

-- Each view's rows. Lists read the (view, ord, key) index, and a start's open rows the
-- (view, open, ord, key) one; a snapshot pages through the primary key.
CREATE TABLE derived_rows (
	view text COLLATE "C" NOT NULL,
	key text COLLATE "C" NOT NULL,
	ord int8 NOT NULL,
	open int2 NOT NULL,
	body text NOT NULL,
	PRIMARY KEY (view, key),
	CONSTRAINT derived_rows_open_flag CHECK (open IN (0, 1))
);
CREATE INDEX derived_rows_order ON derived_rows (view, ord, key);
CREATE INDEX derived_rows_open ON derived_rows (view, open, ord, key);
