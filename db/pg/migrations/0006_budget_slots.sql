-- The Stripe budget's slots (server/stripe/budget-slots.ts), as SQLite keeps them (db/schema.ts):
-- one row per slot of an account's family, naming its holder until `expires_ms` ('' for a slot
-- given back), and what each process wants of a family's slots, by which they are split. Keys
-- compare byte by byte (COLLATE "C"), as on SQLite. A round writes them under the family's
-- transaction lock (db/pg/budget-slots.ts); they are no evidence, so rows change freely.
CREATE TABLE stripe_budget_slots (
	account text COLLATE "C" NOT NULL,
	family text COLLATE "C" NOT NULL,
	slot int4 NOT NULL,
	holder text COLLATE "C" NOT NULL,
	expires_ms int8 NOT NULL,
	PRIMARY KEY (account, family, slot)
);

-- A process's want of a family's slots until `expires_ms`, with the family's calls a second as it
-- is configured (`capacity`, 0 when not known).
CREATE TABLE stripe_budget_wants (
	account text COLLATE "C" NOT NULL,
	family text COLLATE "C" NOT NULL,
	holder text COLLATE "C" NOT NULL,
	slots int4 NOT NULL,
	expires_ms int8 NOT NULL,
	capacity int4 NOT NULL DEFAULT 0,
	PRIMARY KEY (account, family, holder)
);
