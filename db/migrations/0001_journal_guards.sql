-- Custom SQL migration file, put your code below! --
-- The journal is append-only: an entry once written is evidence, so no statement may change or remove it.
CREATE TRIGGER `entries_no_update` BEFORE UPDATE ON `entries`
BEGIN
	SELECT RAISE(ABORT, 'entries is append-only');
END;
--> statement-breakpoint
CREATE TRIGGER `entries_no_delete` BEFORE DELETE ON `entries`
BEGIN
	SELECT RAISE(ABORT, 'entries is append-only');
END;
--> statement-breakpoint
-- One chain per effect, never a fork: at most one entry may follow a given entry, and at most one may start the chain.
CREATE UNIQUE INDEX `entries_no_fork` ON `entries` (`effect_id`, ifnull(`prev`, ''));
--> statement-breakpoint
-- An effect commits at most once (invariant I2), even if a caller skips the dispatch check.
CREATE UNIQUE INDEX `entries_one_committed` ON `entries` (`effect_id`) WHERE `kind` = 'COMMITTED';
