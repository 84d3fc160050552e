CREATE TABLE `grants` (
	`lease_id` text PRIMARY KEY NOT NULL,
	`max_cents` integer,
	`expires_at_ms` integer,
	`granted_at_ms` integer NOT NULL,
	`revoked_at_ms` integer
);
