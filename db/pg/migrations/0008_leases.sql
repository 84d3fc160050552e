-- Background-work leases (db/port/leases.ts), as SQLite keeps them (db/schema.ts,
-- db/migrations/0015_work_leases.sql): one row per named piece of background work, held by one
-- server until `expires_ms` (ms on the database's clock), '' for a lease given back; `epoch` grows
-- each time the lease passes to another holder. Keys compare byte by byte (COLLATE "C"). They are
-- no evidence: rows change freely, and only ever by the conditional writes of db/pg/leases.ts.
CREATE TABLE work_leases (
	name text COLLATE "C" PRIMARY KEY,
	holder text COLLATE "C" NOT NULL,
	epoch int8 NOT NULL,
	expires_ms int8 NOT NULL
);
