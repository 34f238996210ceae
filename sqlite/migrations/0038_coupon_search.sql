-- Coupon search for a shop's staff (issue 29), and the audit of coupons
-- changed by hand.
--
-- A search is a range of one index, newest first (ORDER BY id DESC):
-- by user the (user, template, seq) index, by code the primary key (a
-- code is its coupon's id, permuted), by template or task the two below,
-- whose id column lets the cursor (id < ?) start where the last page
-- ended, so a page costs its rows, not the template's millions.
CREATE INDEX coupons_template_status_id ON coupons (template_id, status, id);
CREATE INDEX coupons_task_id ON coupons (task_id, id) WHERE task_id IS NOT NULL;

-- A coupon's history: its events in the outbox, by coupon.
CREATE INDEX events_object ON events (object_id, id);

CREATE TABLE coupon_audit (
	id        INTEGER PRIMARY KEY,
	coupon_id INTEGER NOT NULL,
	shop_no   INTEGER NOT NULL,
	actor     TEXT    NOT NULL,
	action    TEXT    NOT NULL,
	reason    TEXT    NOT NULL,
	at        INTEGER NOT NULL
) STRICT;
CREATE INDEX coupon_audit_coupon ON coupon_audit (coupon_id, id);
