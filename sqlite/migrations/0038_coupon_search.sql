-- Coupon search for a shop's staff (issue 29), and the audit of coupons
-- changed by hand.
--
-- A search is a range of one index, newest first (ORDER BY id DESC):
-- by code the primary key (a code is its coupon's id, permuted); by user
-- the (user, template, seq) index, whose range is the user's few coupons,
-- sorted by id in memory; by template, by template and status, and by
-- task the three below, read backwards from the cursor (id < ?) in id
-- order, so a page costs its rows, not the template's millions. Two
-- indexes by template: with only (template, status, id), a search by
-- template alone would sort every coupon of the template for one page.
CREATE INDEX coupons_template_id ON coupons (template_id, id);
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
