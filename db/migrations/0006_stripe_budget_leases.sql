CREATE TABLE `stripe_budget_leases` (
	`account` text NOT NULL,
	`family` text NOT NULL,
	`slot` integer NOT NULL,
	`holder` text NOT NULL,
	`expires_ms` integer NOT NULL,
	PRIMARY KEY(`account`, `family`, `slot`)
);
--> statement-breakpoint
CREATE TABLE `stripe_budget_wants` (
	`account` text NOT NULL,
	`family` text NOT NULL,
	`holder` text NOT NULL,
	`slots` integer NOT NULL,
	`expires_ms` integer NOT NULL,
	PRIMARY KEY(`account`, `family`, `holder`)
);
