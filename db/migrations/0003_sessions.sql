CREATE TABLE `sessions` (
	`id_hash` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`csrf_token` text NOT NULL,
	`created_at_ms` integer NOT NULL,
	`last_seen_at_ms` integer NOT NULL
);
