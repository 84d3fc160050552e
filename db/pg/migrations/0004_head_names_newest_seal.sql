-- The head moves only as a write moves it: to the seal that write made last, counting the entries
-- it added. Moving forward was all 0002 asked, so its global hash could be rewritten at the same
-- seq (the next entry would then chain from a forged hash) and its seq or size moved past every
-- entry (the next write would leave a gap). Writers move the head after their rows and seals, in
-- the same transaction, so this reads them; the lookups are by primary key.
CREATE OR REPLACE FUNCTION refuse_head_backwards() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.id <> OLD.id OR NEW.seq < OLD.seq OR NEW.size < OLD.size THEN
		RAISE EXCEPTION 'journal_head only moves forward (seq % to %)', OLD.seq, NEW.seq USING ERRCODE = 'restrict_violation';
	END IF;
	IF NEW.global_hash IS DISTINCT FROM (SELECT s.global_hash FROM public.journal_seals AS s WHERE s.seq = NEW.seq)
		OR EXISTS (SELECT 1 FROM public.journal_seals AS s WHERE s.seq > NEW.seq)
		OR NEW.size - OLD.size <> (SELECT count(*) FROM public.entries AS e WHERE e.seq > OLD.seq AND e.seq <= NEW.seq) THEN
		RAISE EXCEPTION 'journal_head must name the newest seal and count the entries written (seq % to %)', OLD.seq, NEW.seq USING ERRCODE = 'restrict_violation';
	END IF;
	RETURN NEW;
END
$$;
