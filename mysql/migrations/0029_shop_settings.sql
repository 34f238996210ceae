-- Shops' settings (quan.ShopSettings): what a merchant sets for the whole
-- shop. A shop without a row has the zero settings.
CREATE TABLE shop_settings (
	shop_no         BIGINT       NOT NULL PRIMARY KEY,
	daily_claim_cap BIGINT       NOT NULL DEFAULT 0,
	updated_at      DATETIME(6)  NOT NULL,
	updated_by      VARCHAR(255) NOT NULL,
	CHECK (daily_claim_cap >= 0)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- The coupons claims issued, per template, hour and slot, beside issued
-- (which counts every source): what a shop's daily claim count restarts
-- from when the cache lost it (quan.ShopStore.ShopClaimed), read along
-- template_stats_hourly_shop. Hours before this migration count no
-- claims: nothing was capped then.
ALTER TABLE template_stats_hourly ADD COLUMN claimed BIGINT NOT NULL DEFAULT 0;
