-- A coupon locked for an order holds until locked_until (NULL unless
-- locked): then it is available again by itself. Reads apply that at once;
-- the sweeper writes it down, along coupons_status_valid_end for the
-- coupons whose window closed; locked coupons are few, and it finds those
-- whose lock ran out along the same index's status prefix.

ALTER TABLE coupons ADD COLUMN locked_until DATETIME(6) NULL AFTER order_id;
