-- Distribution tasks, the rows they failed, and the coupons users hold.
--
-- Times are DATETIME(6) in UTC; NULL where a time does not apply (a task
-- not started yet, a send time of "at once").

CREATE TABLE tasks (
	id          BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
	shop_no     BIGINT       NOT NULL,
	template_id BIGINT       NOT NULL,
	name        VARCHAR(255) NOT NULL,
	file_name   TEXT         NOT NULL,
	file_path   TEXT         NOT NULL,
	file_size   BIGINT       NOT NULL,
	file_sha256 VARCHAR(64)  NOT NULL,
	sheet       VARCHAR(255) NOT NULL,
	notify      VARCHAR(255) NOT NULL, -- comma list: inbox,sms
	send_at     DATETIME(6)  NULL,     -- NULL: at once
	dry_run     BOOLEAN      NOT NULL,
	chunk_size  BIGINT       NOT NULL,
	status      VARCHAR(32)  NOT NULL,
	reason      TEXT         NOT NULL,

	-- quan.TaskCounts, one column per counter.
	count_rows     BIGINT NOT NULL DEFAULT 0,
	count_valid    BIGINT NOT NULL DEFAULT 0,
	count_issued   BIGINT NOT NULL DEFAULT 0,
	count_canceled BIGINT NOT NULL DEFAULT 0,
	failed_invalid_id        BIGINT NOT NULL DEFAULT 0,
	failed_inexact_number    BIGINT NOT NULL DEFAULT 0,
	failed_duplicate         BIGINT NOT NULL DEFAULT 0,
	failed_limit_reached     BIGINT NOT NULL DEFAULT 0,
	failed_out_of_stock      BIGINT NOT NULL DEFAULT 0,
	failed_template_inactive BIGINT NOT NULL DEFAULT 0,

	-- The checkpoint.
	chunks_done BIGINT NOT NULL DEFAULT 0,
	bytes_read  BIGINT NOT NULL DEFAULT 0,
	bytes_total BIGINT NOT NULL DEFAULT 0,

	report_path TEXT         NOT NULL,
	created_by  VARCHAR(255) NOT NULL,
	created_at  DATETIME(6)  NOT NULL,
	started_at  DATETIME(6)  NULL,
	finished_at DATETIME(6)  NULL,
	updated_at  DATETIME(6)  NOT NULL,

	-- The runner holding the task until lease_until.
	owner       VARCHAR(255) NOT NULL,
	lease_until DATETIME(6)  NULL,

	CONSTRAINT tasks_shop_positive CHECK (shop_no > 0),
	CONSTRAINT tasks_template FOREIGN KEY (template_id) REFERENCES templates (id),

	-- A merchant's list, newest first: WHERE shop_no = ? ORDER BY id DESC
	-- (the primary key ends every secondary index).
	INDEX tasks_shop_id (shop_no),
	-- ClaimTask: the pending tasks whose send time has come and the
	-- running tasks, whose leases it then checks. Finished tasks, the bulk
	-- of the table, are never read through it.
	INDEX tasks_status_send_at (status, send_at)
	-- CouponStats(template, 0) sums the issued counters of a template's
	-- tasks through the index InnoDB makes for the foreign key.
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- The rows of a task that got no coupon. A chunk appends its rows in line
-- order, so the clustered key (task_id, line) grows at its end.
CREATE TABLE task_failures (
	task_id BIGINT      NOT NULL,
	line    BIGINT      NOT NULL,
	raw     TEXT        NOT NULL, -- the user id as written in the file
	cause   VARCHAR(32) NOT NULL,
	PRIMARY KEY (task_id, line)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Coupons are never deleted (a revoked coupon keeps its row). The
-- clustered key is an AUTO_INCREMENT id, so bulk inserts append to the
-- table's end whatever their users.
--
-- There are no foreign keys: checking one is an index search per inserted
-- row, and the store writes a coupon only for a template (and task) it has
-- just locked in the same transaction.
CREATE TABLE coupons (
	id          BIGINT      NOT NULL AUTO_INCREMENT PRIMARY KEY,
	template_id BIGINT      NOT NULL,
	shop_no     BIGINT      NOT NULL,
	user_id     BIGINT      NOT NULL,
	seq         BIGINT      NOT NULL, -- 1 … the template's per-user limit
	status      VARCHAR(32) NOT NULL,
	valid_start DATETIME(6) NOT NULL,
	valid_end   DATETIME(6) NOT NULL,
	source      VARCHAR(32) NOT NULL,
	task_id     BIGINT      NULL,         -- NULL unless from a distribution task
	order_id    VARCHAR(64) NULL,         -- NULL unless an order holds or used it
	created_at  DATETIME(6) NOT NULL,
	updated_at  DATETIME(6) NOT NULL,

	-- The one index on a user's coupons. It serves the per-user limit (the
	-- count of a user's coupons of a template is a range of it), refuses a
	-- second coupon with the same receive sequence (so two issuers racing
	-- for the same user cannot both win), and the wallet: WHERE user_id = ?.
	UNIQUE INDEX coupons_user_template_seq (user_id, template_id, seq),

	-- The expiry sweeper: WHERE status = 'available' AND valid_end <= ?. A
	-- distribution inserts its coupons with one valid_end per chunk and
	-- rising ids, so its entries land next to each other: cheap appends,
	-- unlike the random user ids of the index above.
	INDEX coupons_status_valid_end (status, valid_end)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
