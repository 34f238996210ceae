-- Shops' settings (quan.ShopSettings): what a merchant sets for the whole
-- shop. A shop without a row has the zero settings.
CREATE TABLE shop_settings (
	shop_no         INTEGER NOT NULL PRIMARY KEY,
	daily_claim_cap INTEGER NOT NULL DEFAULT 0 CHECK (daily_claim_cap >= 0),
	updated_at      INTEGER NOT NULL,
	updated_by      TEXT    NOT NULL
) STRICT;

-- The coupons claims issued, per template and hour, beside issued (which
-- counts every source): what a shop's daily claim count restarts from
-- when the cache lost it (quan.ShopStore.ShopClaimed), read along
-- template_stats_hourly_shop. Hours before this migration count no
-- claims: nothing was capped then.
ALTER TABLE template_stats_hourly ADD COLUMN claimed INTEGER NOT NULL DEFAULT 0;
