-- Used, expired and revoked coupons of ended templates, moved out of
-- coupons after a while (--archive-after; off by default). Only ended
-- templates: they issue no more, so the per-user limit, which counts the
-- coupons in coupons, no longer needs them.

CREATE TABLE coupons_archive (
	id           BIGINT      NOT NULL PRIMARY KEY,
	template_id  BIGINT      NOT NULL,
	shop_no      BIGINT      NOT NULL,
	user_id      BIGINT      NOT NULL,
	seq          BIGINT      NOT NULL,
	code         VARCHAR(24) NULL,
	status       VARCHAR(32) NOT NULL,
	valid_start  DATETIME(6) NOT NULL,
	valid_end    DATETIME(6) NOT NULL,
	source       VARCHAR(32) NOT NULL,
	task_id      BIGINT      NULL,
	order_id     VARCHAR(64) NULL,
	locked_until DATETIME(6) NULL,
	created_at   DATETIME(6) NOT NULL,
	updated_at   DATETIME(6) NOT NULL,
	archived_at  DATETIME(6) NOT NULL,
	INDEX coupons_archive_user (user_id, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
