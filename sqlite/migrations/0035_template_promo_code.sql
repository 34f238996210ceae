-- A template's shared public code (口令券, issue 28): users claim its
-- coupons by typing it. Kept upper-case; '' for none. One code belongs
-- to at most one active or paused template: the partial unique index
-- refuses a second, race-safe, and an ended template (or a draft) holds
-- none. PromoCodeTemplate reads along it.
ALTER TABLE templates ADD COLUMN promo_code TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX templates_promo_code_held ON templates (promo_code)
	WHERE promo_code <> '' AND status IN ('active', 'paused');
