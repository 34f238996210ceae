-- discount is what a coupon takes off the order that holds or used it, in
-- fen (quan.Coupon.Discount): the lock prices it, and the statistics count
-- it as discount given once the coupon is used. Coupons locked or used
-- before this migration have 0: their discount was not kept. Added in
-- place (INSTANT): the tables are not copied.
ALTER TABLE coupons ADD COLUMN discount BIGINT NOT NULL DEFAULT 0;
ALTER TABLE coupons_archive ADD COLUMN discount BIGINT NOT NULL DEFAULT 0;
