ALTER TABLE `entries` ADD `reserves` text;--> statement-breakpoint
CREATE INDEX `entries_reserves_seq` ON `entries` (`reserves`,`seq`);