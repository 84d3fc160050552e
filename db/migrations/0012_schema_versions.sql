CREATE TABLE `schema_versions` (
	`schema` integer PRIMARY KEY NOT NULL,
	`interlock` text NOT NULL,
	`migrated_at_ms` integer NOT NULL
);
