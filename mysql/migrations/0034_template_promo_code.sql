-- A template's shared public code (口令券, issue 28): users claim its
-- coupons by typing it. Kept upper-case; '' for none. One code belongs
-- to at most one active or paused template: promo_code_held is the code
-- while the template is active or paused and NULL otherwise, and its
-- unique index (which admits any number of NULLs) refuses a second,
-- race-safe, on MySQL and MariaDB alike (neither has partial indexes).
-- PromoCodeTemplate reads along it.
ALTER TABLE templates
	ADD COLUMN promo_code VARCHAR(32) NOT NULL DEFAULT '',
	ADD COLUMN promo_code_held VARCHAR(32) AS
		(CASE WHEN promo_code <> '' AND status IN ('active', 'paused') THEN promo_code END) STORED,
	ADD UNIQUE INDEX templates_promo_code_held (promo_code_held);
