CREATE TABLE `claims` (
	`effect_id` text PRIMARY KEY NOT NULL,
	`owner` text NOT NULL,
	`expires_ms` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `entries` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`effect_id` text NOT NULL,
	`kind` text NOT NULL,
	`prev` text,
	`hash` text NOT NULL,
	`closes` integer NOT NULL,
	`ts_ms` integer NOT NULL,
	`body` text NOT NULL,
	CONSTRAINT "entries_kind_known" CHECK("entries"."kind" IN ('PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED', 'REFUSED', 'AMBIGUOUS', 'ESCALATED', 'DECIDED', 'CONFIRMED')),
	CONSTRAINT "entries_closes_flag" CHECK("entries"."closes" IN (0, 1))
);
--> statement-breakpoint
CREATE UNIQUE INDEX `entries_hash_unique` ON `entries` (`hash`);--> statement-breakpoint
CREATE INDEX `entries_effect_seq` ON `entries` (`effect_id`,`seq`);--> statement-breakpoint
CREATE INDEX `entries_kind` ON `entries` (`kind`);