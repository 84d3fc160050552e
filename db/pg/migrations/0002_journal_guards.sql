-- The journal and its global chain are evidence: no statement may change or remove a row, and
-- TRUNCATE (which fires no row trigger) is refused too. The owner can still drop a trigger; the
-- application's role owns nothing and so cannot.
CREATE FUNCTION refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION '% is append-only', TG_TABLE_NAME USING ERRCODE = 'restrict_violation';
END
$$;

CREATE TRIGGER entries_no_update BEFORE UPDATE ON entries FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER entries_no_delete BEFORE DELETE ON entries FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER entries_no_truncate BEFORE TRUNCATE ON entries FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();
CREATE TRIGGER journal_seals_no_update BEFORE UPDATE ON journal_seals FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER journal_seals_no_delete BEFORE DELETE ON journal_seals FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER journal_seals_no_truncate BEFORE TRUNCATE ON journal_seals FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();

-- The head only moves forward, and is never removed.
CREATE FUNCTION refuse_head_backwards() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.id <> OLD.id OR NEW.seq < OLD.seq OR NEW.size < OLD.size THEN
		RAISE EXCEPTION 'journal_head only moves forward (seq % to %)', OLD.seq, NEW.seq USING ERRCODE = 'restrict_violation';
	END IF;
	RETURN NEW;
END
$$;

CREATE TRIGGER journal_head_forward BEFORE UPDATE ON journal_head FOR EACH ROW EXECUTE FUNCTION refuse_head_backwards();
CREATE TRIGGER journal_head_no_delete BEFORE DELETE ON journal_head FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER journal_head_no_truncate BEFORE TRUNCATE ON journal_head FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();

-- One chain per effect, never a fork: at most one entry may follow a given entry, and at most one
-- may start the chain.
CREATE UNIQUE INDEX entries_no_fork ON entries (effect_id, coalesce(prev, ''));

-- An effect commits at most once (invariant I2), even if a caller skips the dispatch check.
CREATE UNIQUE INDEX entries_one_committed ON entries (effect_id) WHERE kind = 'COMMITTED';
