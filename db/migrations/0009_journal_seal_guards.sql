-- The global chain and the checkpoints are evidence like the entries: no statement may change or remove them.
CREATE TRIGGER `journal_seals_no_update` BEFORE UPDATE ON `journal_seals`
BEGIN
	SELECT RAISE(ABORT, 'journal_seals is append-only');
END;
--> statement-breakpoint
CREATE TRIGGER `journal_seals_no_delete` BEFORE DELETE ON `journal_seals`
BEGIN
	SELECT RAISE(ABORT, 'journal_seals is append-only');
END;
--> statement-breakpoint
CREATE TRIGGER `journal_checkpoints_no_update` BEFORE UPDATE ON `journal_checkpoints`
BEGIN
	SELECT RAISE(ABORT, 'journal_checkpoints is append-only');
END;
--> statement-breakpoint
CREATE TRIGGER `journal_checkpoints_no_delete` BEFORE DELETE ON `journal_checkpoints`
BEGIN
	SELECT RAISE(ABORT, 'journal_checkpoints is append-only');
END;
