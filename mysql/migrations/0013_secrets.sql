-- Secrets the store keeps with its data, by name. coupon_code is the key
-- of the coupons' codes (quan.CodeKey): a coupon's code is made from its
-- id with it, so every process on the database must read the same one.
-- The first process to open the database makes it (INSERT IGNORE, then
-- read back: processes opening it at once agree on one; see Open), and a
-- backup of the database carries it along: without it no code issued
-- could be read back.
CREATE TABLE secrets (
	name  VARCHAR(64)    NOT NULL PRIMARY KEY,
	value VARBINARY(255) NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
