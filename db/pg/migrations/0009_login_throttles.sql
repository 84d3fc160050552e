-- The login throttles' counts (db/port/login-throttles.ts), shared by every server on the
-- database: one row per count of a kind ('pair' for a name from one address, 'name', 'address'),
-- failures as of `at_ms` (fractional once drained, so float8), and `forget_at_ms`, from when the
-- count says nothing any more and the row may go. Keys compare byte by byte (COLLATE "C"). They are
-- no evidence: rows change and go freely, only ever through db/pg/login-throttles.ts.
CREATE TABLE login_throttles (
	kind text COLLATE "C" NOT NULL,
	key text COLLATE "C" NOT NULL,
	failures float8 NOT NULL,
	at_ms int8 NOT NULL,
	forget_at_ms int8 NOT NULL,
	PRIMARY KEY (kind, key)
);

-- Rows past their window, pruned a few at a time by each step.
CREATE INDEX login_throttles_forget ON login_throttles (forget_at_ms);
-- Each kind's rows by their last write (then key): past the bound, the least recently written go first.
CREATE INDEX login_throttles_written ON login_throttles (kind, at_ms, key);
