-- What quan knows of users for eligibility rules and segments (issue
-- 20): one row a user, replaced whole by a put or an import; a segment
-- scans it along the primary key. tags and attrs are JSON (a list of
-- strings, an object of strings; see sqlrow.FactsColumns for why). Times
-- are DATETIME(6) in UTC; registered_at is NULL when unknown. region
-- holds at most 64 bytes (quan.MaxFactBytes), so 64 characters.
CREATE TABLE user_facts (
	user_id       BIGINT      NOT NULL PRIMARY KEY,
	level         BIGINT      NOT NULL,
	tags          JSON        NOT NULL,
	registered_at DATETIME(6) NULL,
	region        VARCHAR(64) NOT NULL,
	orders        BIGINT      NOT NULL,
	attrs         JSON        NOT NULL,
	updated_at    DATETIME(6) NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
