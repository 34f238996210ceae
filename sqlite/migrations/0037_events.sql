-- The outbox (issue 30): every event systems downstream may hear of,
-- recorded in the transaction of the change it tells of, and relayed
-- from here to the bus and the webhooks at least once.
--
-- A coupon's event copies the coupon's columns as the change left them
-- (the bulk paths write them with INSERT … SELECT from coupons, in the
-- same batched statements as the coupons); other events hold their
-- object's JSON in data. Times are INTEGER Unix microseconds in UTC.
CREATE TABLE events (
	-- AUTOINCREMENT: the id is the event's id ("evt_<id>") consumers
	-- de-duplicate by, and the retention sweep deletes the newest rows
	-- too: an id is never reused.
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	type        TEXT    NOT NULL,
	shop_no     INTEGER NOT NULL,
	user_id     INTEGER NOT NULL DEFAULT 0,
	object_id   INTEGER NOT NULL,
	created_at  INTEGER NOT NULL,
	-- When a relay may take it: 0 at once; while a relay holds it, the
	-- end of its lease; NULL once relayed.
	due_at      INTEGER DEFAULT 0,
	owner       TEXT    NOT NULL DEFAULT '',
	attempts    INTEGER NOT NULL DEFAULT 0,
	relayed_at  INTEGER,
	data        TEXT,   -- JSON of the task or template; NULL for coupons
	-- The coupon after the change (coupon events only), and its status
	-- before ('' for a coupon issued).
	old_status   TEXT,
	template_id  INTEGER,
	seq          INTEGER,
	status       TEXT,
	valid_start  INTEGER,
	valid_end    INTEGER,
	source       TEXT,
	task_id      INTEGER,
	order_id     TEXT,
	locked_until INTEGER,
	discount     INTEGER,
	coupon_created_at INTEGER
) STRICT;

-- The relays: WHERE due_at <= ? ORDER BY due_at, id. Relayed events leave
-- it.
CREATE INDEX events_due ON events (due_at, id) WHERE due_at IS NOT NULL;

-- The retention sweep of relayed events.
CREATE INDEX events_relayed ON events (relayed_at) WHERE relayed_at IS NOT NULL;
