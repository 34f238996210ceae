-- What quan knows of users for eligibility rules and segments (issue
-- 20): one row a user, replaced whole by a put or an import. user_id is
-- the rowid, so a segment's scan in user id order reads the table in its
-- own order. tags and attrs are JSON (a list of strings, an object of
-- strings; see sqlrow.FactsColumns for why). Times are INTEGER Unix
-- microseconds in UTC; registered_at is NULL when unknown.
CREATE TABLE user_facts (
	user_id       INTEGER NOT NULL PRIMARY KEY,
	level         INTEGER NOT NULL,
	tags          TEXT    NOT NULL CHECK (json_valid(tags)),
	registered_at INTEGER,
	region        TEXT    NOT NULL,
	orders        INTEGER NOT NULL,
	attrs         TEXT    NOT NULL CHECK (json_valid(attrs)),
	updated_at    INTEGER NOT NULL
) STRICT;
