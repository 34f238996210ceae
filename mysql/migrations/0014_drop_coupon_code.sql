-- A coupon's code is made from its id (quan.CodeKey, with the key in
-- secrets) rather than drawn at random and stored: the unique index of
-- random codes put every insert on a random page of its B-tree, which
-- dominated the page reads and writes of a million-coupon distribution.
-- The codes stored before are dropped with the column, and those coupons
-- get codes made from their ids. The index goes first (in place), then
-- the columns.
ALTER TABLE coupons DROP INDEX coupons_code;
ALTER TABLE coupons DROP COLUMN code;
ALTER TABLE coupons_archive DROP COLUMN code;
