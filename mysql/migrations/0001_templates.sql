-- Coupon templates and their audit trail.
--
-- Times are DATETIME(6) in UTC (the connection's time_zone is +00:00 and
-- the driver writes and reads UTC); a time that does not apply (the start
-- and end of a relative validity) is NULL. Money is BIGINT fen.
--
-- Text is utf8mb4 with the binary collation: equality and order are by
-- code point, as in SQLite and Go, not the accent- and case-folding
-- default (utf8mb4_general_ci would make "cafe" equal "café"). The name
-- search lowers both sides itself.
--
-- Statements end with a semicolon at the end of a line: migrate splits
-- them there, so no comment line may end with one.

CREATE TABLE templates (
	-- AUTO_INCREMENT never hands out an id again, even after a rollback
	-- (InnoDB keeps the counter across restarts since MySQL 8 and MariaDB
	-- 10.2.4), so audit entries, coupons and logs keep pointing at the
	-- template they were written for.
	id             BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
	shop_no        BIGINT       NOT NULL,
	name           VARCHAR(255) NOT NULL,
	description    TEXT         NOT NULL,
	kind           VARCHAR(32)  NOT NULL,
	rule_amount    BIGINT       NOT NULL DEFAULT 0,
	rule_threshold BIGINT       NOT NULL DEFAULT 0,
	rule_rate      BIGINT       NOT NULL DEFAULT 0,
	rule_cap       BIGINT       NOT NULL DEFAULT 0,
	rule_step      BIGINT       NOT NULL DEFAULT 0,
	source         VARCHAR(32)  NOT NULL,
	scope_kind     VARCHAR(32)  NOT NULL,
	scope_ids      TEXT         NOT NULL, -- JSON array of strings
	issue_start    DATETIME(6)  NOT NULL,
	issue_end      DATETIME(6)  NOT NULL,
	validity_kind  VARCHAR(32)  NOT NULL,
	validity_start DATETIME(6)  NULL,
	validity_end   DATETIME(6)  NULL,
	validity_hours BIGINT       NOT NULL DEFAULT 0,
	per_user_limit BIGINT       NOT NULL,
	stock          BIGINT       NOT NULL,
	total_stock    BIGINT       NOT NULL,
	status         VARCHAR(32)  NOT NULL,
	created_by     VARCHAR(255) NOT NULL,
	created_at     DATETIME(6)  NOT NULL,
	updated_at     DATETIME(6)  NOT NULL,
	CONSTRAINT templates_shop_positive CHECK (shop_no > 0),
	CONSTRAINT templates_stock_nonnegative CHECK (stock >= 0),

	-- A merchant's list, newest first: WHERE shop_no = ? ORDER BY id DESC,
	-- optionally narrowed by status, the filter merchants use most. InnoDB
	-- appends the primary key to every secondary index, so (shop_no) is
	-- (shop_no, id) and reads backwards for the newest first.
	INDEX templates_shop_id (shop_no),
	INDEX templates_shop_status_id (shop_no, status)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE template_audit (
	id          BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
	template_id BIGINT       NOT NULL,
	shop_no     BIGINT       NOT NULL,
	actor       VARCHAR(255) NOT NULL,
	action      VARCHAR(64)  NOT NULL,
	at          DATETIME(6)  NOT NULL,
	changes     LONGTEXT     NOT NULL, -- JSON array of quan.FieldChange
	INDEX template_audit_template_id (template_id, id),
	CONSTRAINT template_audit_template FOREIGN KEY (template_id) REFERENCES templates (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
