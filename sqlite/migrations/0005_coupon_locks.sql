-- A coupon locked for an order holds until locked_until (NULL unless
-- locked): then it is available again by itself. Reads apply that at once;
-- the sweeper writes it down, along coupons_status_valid_end for the
-- coupons whose window closed and this index for the locks that ran out.

ALTER TABLE coupons ADD COLUMN locked_until INTEGER;

CREATE INDEX coupons_status_locked_until ON coupons (status, locked_until) WHERE status = 'locked';
