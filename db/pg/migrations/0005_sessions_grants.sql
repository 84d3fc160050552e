-- People's sessions and approval grants on PostgreSQL, as SQLite keeps them (db/schema.ts,
-- db/migrations/0002_grants.sql and 0003_sessions.sql): the same columns and keys, times in ms as
-- int8, ids compared byte by byte (COLLATE "C"). Neither is evidence: a session ends by its row
-- going, and a grant is replaced or revoked in place.

-- Durable leases by id (db/port/grants.ts): null `max_cents` for no cap, null `expires_at_ms` for
-- never, null `revoked_at_ms` while the grant stands.
CREATE TABLE grants (
	lease_id text COLLATE "C" PRIMARY KEY,
	max_cents int8,
	expires_at_ms int8,
	granted_at_ms int8 NOT NULL,
	revoked_at_ms int8
);

-- Approvers' sessions by the SHA-256 of their id (db/port/sessions.ts): a copy of this table
-- cannot be replayed as a cookie.
CREATE TABLE sessions (
	id_hash text COLLATE "C" PRIMARY KEY,
	name text COLLATE "C" NOT NULL,
	csrf_token text NOT NULL,
	created_at_ms int8 NOT NULL,
	last_seen_at_ms int8 NOT NULL
);
