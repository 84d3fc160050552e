CREATE TABLE `work_leases` (
	`name` text PRIMARY KEY NOT NULL,
	`holder` text NOT NULL,
	`epoch` integer NOT NULL,
	`expires_ms` integer NOT NULL
);
