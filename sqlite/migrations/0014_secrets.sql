-- Secrets the store keeps with its data, by name. coupon_code is the key
-- of the coupons' codes (quan.CodeKey): a coupon's code is made from its
-- id with it, so every process on the database must read the same one.
-- The first process to open the database makes it (see Open), and a
-- backup of the database carries it along: without it no code issued
-- could be read back.
CREATE TABLE secrets (
	name  TEXT NOT NULL PRIMARY KEY,
	value BLOB NOT NULL
) STRICT, WITHOUT ROWID;
