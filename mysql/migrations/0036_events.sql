-- The outbox (issue 30): every event systems downstream may hear of,
-- recorded in the transaction of the change it tells of, and relayed
-- from here to the bus and the webhooks at least once. See
-- sqlite/migrations/0037_events.sql.
CREATE TABLE events (
	-- The id is the event's id ("evt_<id>") consumers de-duplicate by.
	id          BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
	type        VARCHAR(32)  NOT NULL,
	shop_no     BIGINT       NOT NULL,
	user_id     BIGINT       NOT NULL DEFAULT 0,
	object_id   BIGINT       NOT NULL,
	created_at  DATETIME(6)  NOT NULL,
	-- When a relay may take it: the epoch at once; while a relay holds
	-- it, the end of its lease; NULL once relayed, which the range
	-- due_at <= ? then skips.
	due_at      DATETIME(6)  NULL DEFAULT '1970-01-02 00:00:00',
	owner       VARCHAR(128) NOT NULL DEFAULT '',
	attempts    INT          NOT NULL DEFAULT 0,
	relayed_at  DATETIME(6)  NULL,
	data        MEDIUMTEXT   NULL,  -- JSON of the task or template; NULL for coupons
	-- The coupon after the change (coupon events only), and its status
	-- before ('' for a coupon issued).
	old_status   VARCHAR(32) NULL,
	template_id  BIGINT      NULL,
	seq          BIGINT      NULL,
	status       VARCHAR(32) NULL,
	valid_start  DATETIME(6) NULL,
	valid_end    DATETIME(6) NULL,
	source       VARCHAR(32) NULL,
	task_id      BIGINT      NULL,
	order_id     VARCHAR(64) NULL,
	locked_until DATETIME(6) NULL,
	discount     BIGINT      NULL,
	coupon_created_at DATETIME(6) NULL,

	-- The relays: WHERE due_at <= ? ORDER BY due_at, id.
	INDEX events_due (due_at, id),
	-- The retention sweep of relayed events.
	INDEX events_relayed (relayed_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
