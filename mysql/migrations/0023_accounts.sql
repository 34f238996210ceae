-- The operator console's accounts, their sessions and the failed
-- sign-ins that throttle guessing (issue 19). Times are DATETIME(6) in
-- UTC.
CREATE TABLE accounts (
	id            BIGINT         NOT NULL AUTO_INCREMENT PRIMARY KEY,
	name          VARCHAR(64)    NOT NULL,
	-- name lowered: names are unique, and found, regardless of ASCII
	-- case, under the binary collation every table here uses.
	name_key      VARCHAR(64)    NOT NULL,
	role          VARCHAR(16)    NOT NULL,
	shop_no       BIGINT         NOT NULL DEFAULT 0,
	disabled      BOOLEAN        NOT NULL DEFAULT FALSE,
	password_hash VARBINARY(128) NOT NULL,
	created_by    VARCHAR(255)   NOT NULL,
	created_at    DATETIME(6)    NOT NULL,
	updated_at    DATETIME(6)    NOT NULL,
	UNIQUE KEY accounts_name_key (name_key),
	-- A shop's accounts by name: WHERE shop_no = ? ORDER BY name_key, id.
	INDEX accounts_shop_name (shop_no, name_key)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- id is the SHA-256 of the browser's token, never the token itself.
CREATE TABLE console_sessions (
	id         VARBINARY(64) NOT NULL PRIMARY KEY,
	account_id BIGINT        NOT NULL,
	csrf       VARCHAR(64)   NOT NULL,
	addr       VARCHAR(255)  NOT NULL,
	created_at DATETIME(6)   NOT NULL,
	seen_at    DATETIME(6)   NOT NULL,
	expires_at DATETIME(6)   NOT NULL,
	-- An account's sessions, ended together when it is disabled.
	INDEX console_sessions_account (account_id),
	-- The hourly sweep: WHERE expires_at < ?.
	INDEX console_sessions_expires (expires_at),
	CONSTRAINT console_sessions_account FOREIGN KEY (account_id) REFERENCES accounts (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- The failed sign-ins under one key ("account:NAME" lowered, or
-- "addr:IP") since first_at; a failure after the window of first_at
-- starts the count again.
CREATE TABLE login_failures (
	throttle_key VARCHAR(255) NOT NULL PRIMARY KEY,
	failures     BIGINT       NOT NULL,
	first_at     DATETIME(6)  NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
