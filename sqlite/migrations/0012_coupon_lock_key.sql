-- lock_key identifies the request that locked a coupon for its order
-- (quan.LockRequest.Key), NULL when none: locking the order again with the
-- same request answers the lock, with another one is a conflict. The
-- archive keeps it as coupons hold it.
ALTER TABLE coupons ADD COLUMN lock_key TEXT;
ALTER TABLE coupons_archive ADD COLUMN lock_key TEXT;
