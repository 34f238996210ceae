-- The operator console's accounts, their sessions and the failed
-- sign-ins that throttle guessing (issue 19). Times are INTEGER Unix
-- microseconds in UTC.

CREATE TABLE accounts (
	-- AUTOINCREMENT so an id is never reused: a session or a log line
	-- keeps pointing at the account it was written for.
	id            INTEGER PRIMARY KEY AUTOINCREMENT,
	name          TEXT    NOT NULL,
	-- name lowered: names are unique, and found, regardless of ASCII case.
	name_key      TEXT    NOT NULL UNIQUE,
	role          TEXT    NOT NULL,
	shop_no       INTEGER NOT NULL DEFAULT 0,
	disabled      INTEGER NOT NULL DEFAULT 0,
	password_hash BLOB    NOT NULL,
	created_by    TEXT    NOT NULL,
	created_at    INTEGER NOT NULL,
	updated_at    INTEGER NOT NULL
) STRICT;

-- A shop's accounts by name: WHERE shop_no = ? ORDER BY name_key, id.
CREATE INDEX accounts_shop_name ON accounts (shop_no, name_key);

-- id is the SHA-256 of the browser's token, never the token itself.
CREATE TABLE console_sessions (
	id         BLOB    NOT NULL PRIMARY KEY,
	account_id INTEGER NOT NULL REFERENCES accounts (id),
	csrf       TEXT    NOT NULL,
	addr       TEXT    NOT NULL,
	created_at INTEGER NOT NULL,
	seen_at    INTEGER NOT NULL,
	expires_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- An account's sessions, ended together when it is disabled.
CREATE INDEX console_sessions_account ON console_sessions (account_id);
-- The hourly sweep: WHERE expires_at < ?.
CREATE INDEX console_sessions_expires ON console_sessions (expires_at);

-- The failed sign-ins under one key ("account:NAME" lowered, or
-- "addr:IP") since first_at; a failure after the window of first_at
-- starts the count again.
CREATE TABLE login_failures (
	throttle_key TEXT    NOT NULL PRIMARY KEY,
	failures     INTEGER NOT NULL,
	first_at     INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
