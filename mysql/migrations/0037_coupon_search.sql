-- Coupon search for a shop's staff (issue 29), and the audit of coupons
-- changed by hand. See sqlite/migrations/0038_coupon_search.sql: a search
-- is a range of one index, newest first; InnoDB appends the primary key
-- to every secondary index, so (template_id, status) is ordered by id.
ALTER TABLE coupons
	ADD INDEX coupons_template_id (template_id, id),
	ADD INDEX coupons_template_status_id (template_id, status, id),
	ADD INDEX coupons_task_id (task_id, id);

ALTER TABLE events ADD INDEX events_object (object_id, id);

CREATE TABLE coupon_audit (
	id        BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
	coupon_id BIGINT       NOT NULL,
	shop_no   BIGINT       NOT NULL,
	actor     VARCHAR(255) NOT NULL,
	action    VARCHAR(32)  NOT NULL,
	reason    VARCHAR(2000) NOT NULL,
	at        DATETIME(6)  NOT NULL,
	INDEX coupon_audit_coupon (coupon_id, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
