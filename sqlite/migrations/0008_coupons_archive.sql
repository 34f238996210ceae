-- Used, expired and revoked coupons of ended templates, moved out of
-- coupons after a while (--archive-after; off by default). Only ended
-- templates: they issue no more, so the per-user limit, which counts the
-- coupons in coupons, no longer needs them.

CREATE TABLE coupons_archive (
	id           INTEGER PRIMARY KEY,
	template_id  INTEGER NOT NULL,
	shop_no      INTEGER NOT NULL,
	user_id      INTEGER NOT NULL,
	seq          INTEGER NOT NULL,
	status       TEXT    NOT NULL,
	valid_start  INTEGER NOT NULL,
	valid_end    INTEGER NOT NULL,
	source       TEXT    NOT NULL,
	task_id      INTEGER,
	order_id     TEXT,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL,
	locked_until INTEGER,
	code         TEXT,
	archived_at  INTEGER NOT NULL
) STRICT;

CREATE INDEX coupons_archive_user ON coupons_archive (user_id, id);
