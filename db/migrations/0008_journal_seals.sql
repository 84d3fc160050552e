CREATE TABLE `journal_checkpoints` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`epoch` integer NOT NULL,
	`size` integer NOT NULL,
	`head` text NOT NULL,
	`note` text NOT NULL,
	`signed_at_ms` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `journal_meta` (
	`name` text PRIMARY KEY NOT NULL,
	`value` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `journal_seals` (
	`seq` integer PRIMARY KEY NOT NULL,
	`global_hash` text NOT NULL
);
