CREATE TABLE `derived_cursor` (
	`id` integer PRIMARY KEY NOT NULL,
	`seq` integer NOT NULL,
	`global_hash` text,
	`size` integer NOT NULL,
	`version` text NOT NULL,
	CONSTRAINT "derived_cursor_one_row" CHECK("derived_cursor"."id" = 1)
);
--> statement-breakpoint
CREATE TABLE `derived_digests` (
	`view` text PRIMARY KEY NOT NULL,
	`sum` text NOT NULL,
	`rows` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `derived_marks` (
	`seq` integer NOT NULL,
	`view` text NOT NULL,
	`sum` text NOT NULL,
	`rows` integer NOT NULL,
	`global_hash` text,
	PRIMARY KEY(`seq`, `view`)
);
--> statement-breakpoint
CREATE TABLE `derived_rows` (
	`view` text NOT NULL,
	`key` text NOT NULL,
	`ord` integer NOT NULL,
	`open` integer NOT NULL,
	`body` text NOT NULL,
	PRIMARY KEY(`view`, `key`),
	CONSTRAINT "derived_rows_open_flag" CHECK("derived_rows"."open" IN (0, 1))
);
--> statement-breakpoint
CREATE INDEX `derived_rows_order` ON `derived_rows` (`view`,`ord`,`key`);--> statement-breakpoint
CREATE INDEX `derived_rows_open` ON `derived_rows` (`view`,`open`,`ord`,`key`);