-- lock_key identifies the request that locked a coupon for its order
-- (quan.LockRequest.Key), NULL when none: locking the order again with the
-- same request answers the lock, with another one is a conflict. The
-- archive keeps it as coupons hold it. Both columns are added in place
-- (INSTANT): the tables are not copied.
ALTER TABLE coupons ADD COLUMN lock_key VARCHAR(64) NULL;
ALTER TABLE coupons_archive ADD COLUMN lock_key VARCHAR(64) NULL;
