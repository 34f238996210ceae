-- Every coupon issued gets a code of its own (quan.NewCode): unique among
-- all coupons. Coupons issued before have none (NULL, which the unique
-- index lets repeat).

ALTER TABLE coupons ADD COLUMN code VARCHAR(24) NULL AFTER seq;

CREATE UNIQUE INDEX coupons_code ON coupons (code);
