PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_entries` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`effect_id` text NOT NULL,
	`kind` text NOT NULL,
	`prev` text,
	`hash` text NOT NULL,
	`closes` integer NOT NULL,
	`ts_ms` integer NOT NULL,
	`body` text NOT NULL,
	`reserves` text,
	CONSTRAINT "entries_kind_known" CHECK("__new_entries"."kind" IN ('PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED', 'REFUSED', 'AMBIGUOUS', 'ESCALATED', 'DECIDED', 'CONFIRMED', 'MESSAGE', 'ATTEMPT', 'GAVE_UP', 'EPOCH', 'CONFIG')),
	CONSTRAINT "entries_closes_flag" CHECK("__new_entries"."closes" IN (0, 1))
);
--> statement-breakpoint
INSERT INTO `__new_entries`("seq", "effect_id", "kind", "prev", "hash", "closes", "ts_ms", "body", "reserves") SELECT "seq", "effect_id", "kind", "prev", "hash", "closes", "ts_ms", "body", "reserves" FROM `entries`;--> statement-breakpoint
DROP TABLE `entries`;--> statement-breakpoint
ALTER TABLE `__new_entries` RENAME TO `entries`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE UNIQUE INDEX `entries_hash_unique` ON `entries` (`hash`);--> statement-breakpoint
CREATE INDEX `entries_effect_seq` ON `entries` (`effect_id`,`seq`);--> statement-breakpoint
CREATE INDEX `entries_reserves_seq` ON `entries` (`reserves`,`seq`);--> statement-breakpoint
CREATE INDEX `entries_kind` ON `entries` (`kind`);--> statement-breakpoint
-- The journal gains the CONFIG kind (a reload of the config); SQLite cannot change a CHECK in
-- place, so the table was rebuilt above with every seq kept (the global chain's seals name them),
-- and what 0005_outbox_kinds.sql put on the old one is put back: the append-only triggers, no fork
-- in a chain, at most one COMMITTED per effect.
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
CREATE UNIQUE INDEX `entries_no_fork` ON `entries` (`effect_id`, ifnull(`prev`, ''));
--> statement-breakpoint
CREATE UNIQUE INDEX `entries_one_committed` ON `entries` (`effect_id`) WHERE `kind` = 'COMMITTED';
