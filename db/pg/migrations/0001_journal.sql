-- The journal on PostgreSQL: the same tables and meanings as SQLite's (db/schema.ts), written by
-- hand because drizzle-kit models neither the triggers nor the expression indexes. Bodies are
-- `text`, stored exactly as written (never jsonb, which reorders keys and normalises numbers and so
-- breaks every hash); ids compare byte by byte (COLLATE "C"), so pages order as on SQLite.

-- One row per sealed entry, in the order it was made durable. `seq` is given by the writer under
-- the head row's lock (head + 1), never by a sequence, so rows become visible in seq order.
CREATE TABLE entries (
	seq int8 PRIMARY KEY,
	effect_id text COLLATE "C" NOT NULL,
	kind text COLLATE "C" NOT NULL,
	prev text COLLATE "C",
	hash text COLLATE "C" NOT NULL,
	closes int2 NOT NULL,
	ts_ms int8 NOT NULL,
	body text NOT NULL,
	reserves text COLLATE "C",
	CONSTRAINT entries_seq_from_one CHECK (seq >= 1),
	CONSTRAINT entries_kind_known CHECK (kind IN ('PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED', 'REFUSED', 'AMBIGUOUS', 'ESCALATED', 'DECIDED', 'CONFIRMED', 'MESSAGE', 'ATTEMPT', 'GAVE_UP', 'EPOCH', 'CONFIG')),
	CONSTRAINT entries_closes_flag CHECK (closes IN (0, 1))
);
CREATE UNIQUE INDEX entries_hash_unique ON entries (hash);
CREATE INDEX entries_effect_seq ON entries (effect_id, seq);
CREATE INDEX entries_reserves_seq ON entries (reserves, seq);
CREATE INDEX entries_kind ON entries (kind);

-- The global chain: the global hash of the entry at each seq, written in the entry's transaction.
CREATE TABLE journal_seals (
	seq int8 PRIMARY KEY,
	global_hash text COLLATE "C" NOT NULL
);

-- The head: one row, the newest entry's seq and global hash and how many entries there are. Every
-- write locks it first (SELECT ... FOR UPDATE), which orders the writers of every process.
CREATE TABLE journal_head (
	id int2 PRIMARY KEY,
	seq int8 NOT NULL,
	global_hash text COLLATE "C",
	size int8 NOT NULL,
	CONSTRAINT journal_head_one_row CHECK (id = 1),
	CONSTRAINT journal_head_sealed CHECK ((seq = 0) = (global_hash IS NULL))
);
INSERT INTO journal_head (id, seq, global_hash, size) VALUES (1, 0, NULL, 0);

-- Who currently sends or recovers an effect, until `expires_ms`.
CREATE TABLE claims (
	effect_id text COLLATE "C" PRIMARY KEY,
	owner text COLLATE "C" NOT NULL,
	expires_ms int8 NOT NULL
);

-- Which Interlock brought the database to each schema (the number of migrations applied).
CREATE TABLE schema_versions (
	schema int4 PRIMARY KEY,
	interlock text NOT NULL,
	migrated_at_ms int8 NOT NULL
);
