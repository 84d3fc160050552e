-- Signed checkpoints of the global chain (server/integrity/checkpoints.ts), apart from the
-- entries: `size` entries whose last global hash is `head`, in `epoch`, as the signed `note`. `id`
-- is given under the checkpoints' lock (the newest + 1), so ids run in the order they were kept.
CREATE TABLE journal_checkpoints (
	id int8 PRIMARY KEY,
	epoch int8 NOT NULL,
	size int8 NOT NULL,
	head text COLLATE "C" NOT NULL,
	note text NOT NULL,
	signed_at_ms int8 NOT NULL
);

-- Facts about the journal as a whole, by name: its id (`journal_id`), which names it in checkpoints.
CREATE TABLE journal_meta (
	name text COLLATE "C" PRIMARY KEY,
	value text NOT NULL
);

-- The checkpoints are evidence like the entries: no statement may change or remove them.
CREATE TRIGGER journal_checkpoints_no_update BEFORE UPDATE ON journal_checkpoints FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER journal_checkpoints_no_delete BEFORE DELETE ON journal_checkpoints FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER journal_checkpoints_no_truncate BEFORE TRUNCATE ON journal_checkpoints FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();
