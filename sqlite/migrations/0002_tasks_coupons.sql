-- Distribution tasks, the rows they failed, and the coupons users hold.
--
-- Times are INTEGER Unix microseconds in UTC; NULL where a time does not
-- apply (a task not started yet, a send time of "at once").

CREATE TABLE tasks (
	-- AUTOINCREMENT so an id is never reused: coupons and failure reports
	-- keep pointing at the task that wrote them.
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	shop_no     INTEGER NOT NULL CHECK (shop_no > 0),
	template_id INTEGER NOT NULL REFERENCES templates (id),
	name        TEXT    NOT NULL,
	file_name   TEXT    NOT NULL,
	file_path   TEXT    NOT NULL DEFAULT '',
	file_size   INTEGER NOT NULL,
	file_sha256 TEXT    NOT NULL DEFAULT '',
	sheet       TEXT    NOT NULL DEFAULT '',
	notify      TEXT    NOT NULL DEFAULT '', -- comma list: inbox,sms
	send_at     INTEGER,                     -- NULL: at once
	dry_run     INTEGER NOT NULL DEFAULT 0,  -- 0 or 1
	chunk_size  INTEGER NOT NULL,
	status      TEXT    NOT NULL,
	reason      TEXT    NOT NULL DEFAULT '',

	-- quan.TaskCounts, one column per counter.
	count_rows     INTEGER NOT NULL DEFAULT 0,
	count_valid    INTEGER NOT NULL DEFAULT 0,
	count_issued   INTEGER NOT NULL DEFAULT 0,
	count_canceled INTEGER NOT NULL DEFAULT 0,
	failed_invalid_id        INTEGER NOT NULL DEFAULT 0,
	failed_inexact_number    INTEGER NOT NULL DEFAULT 0,
	failed_duplicate         INTEGER NOT NULL DEFAULT 0,
	failed_limit_reached     INTEGER NOT NULL DEFAULT 0,
	failed_out_of_stock      INTEGER NOT NULL DEFAULT 0,
	failed_template_inactive INTEGER NOT NULL DEFAULT 0,

	-- The checkpoint.
	chunks_done INTEGER NOT NULL DEFAULT 0,
	bytes_read  INTEGER NOT NULL DEFAULT 0,
	bytes_total INTEGER NOT NULL DEFAULT 0,

	report_path TEXT    NOT NULL DEFAULT '',
	created_by  TEXT    NOT NULL,
	created_at  INTEGER NOT NULL,
	started_at  INTEGER,
	finished_at INTEGER,
	updated_at  INTEGER NOT NULL,

	-- The runner holding the task until lease_until.
	owner       TEXT    NOT NULL DEFAULT '',
	lease_until INTEGER
) STRICT;

-- A merchant's list, newest first: WHERE shop_no = ? ORDER BY id DESC.
CREATE INDEX tasks_shop_id ON tasks (shop_no, id DESC);

-- ClaimTask: the pending tasks whose send time has come and the running
-- tasks (whose leases it then checks). Finished tasks, the bulk of the
-- table, are never read through it.
CREATE INDEX tasks_status_send_at ON tasks (status, send_at);

-- CouponStats(template, 0) sums the issued counters of a template's tasks.
CREATE INDEX tasks_template ON tasks (template_id);

-- The rows of a task that got no coupon. A chunk appends its rows in line
-- order, so the clustered key (task_id, line) grows at its end.
CREATE TABLE task_failures (
	task_id INTEGER NOT NULL,
	line    INTEGER NOT NULL,
	raw     TEXT    NOT NULL, -- the user id as written in the file
	cause   TEXT    NOT NULL,
	PRIMARY KEY (task_id, line)
) STRICT, WITHOUT ROWID;

-- Coupons are never deleted (a revoked coupon keeps its row), so a plain
-- INTEGER PRIMARY KEY never reuses an id and costs no sqlite_sequence
-- upkeep on bulk inserts.
--
-- There are no foreign keys: checking one is an index search per inserted
-- row, and the store writes a coupon only for a template (and task) it has
-- just read in the same transaction.
CREATE TABLE coupons (
	id          INTEGER PRIMARY KEY,
	template_id INTEGER NOT NULL,
	shop_no     INTEGER NOT NULL,
	user_id     INTEGER NOT NULL,
	seq         INTEGER NOT NULL, -- 1 … the template's per-user limit
	status      TEXT    NOT NULL,
	valid_start INTEGER NOT NULL,
	valid_end   INTEGER NOT NULL,
	source      TEXT    NOT NULL,
	task_id     INTEGER,          -- NULL unless from a distribution task
	order_id    TEXT,             -- NULL unless an order holds or used it
	created_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL
) STRICT;

-- The one index on a user's coupons. It serves the per-user limit (the
-- count of a user's coupons of a template is a range of it), refuses a
-- second coupon with the same receive sequence (so two issuers racing for
-- the same user cannot both win), and the wallet: WHERE user_id = ?.
CREATE UNIQUE INDEX coupons_user_template_seq ON coupons (user_id, template_id, seq);

-- The expiry sweeper: WHERE status = 'available' AND valid_end <= ?. A
-- distribution inserts its coupons with one valid_end per chunk and rising
-- ids, so its entries land next to each other at the end of a run: cheap
-- appends, unlike the random user ids of the index above.
CREATE INDEX coupons_status_valid_end ON coupons (status, valid_end);
