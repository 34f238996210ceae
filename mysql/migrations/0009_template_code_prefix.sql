-- The prefix of the codes of a template's coupons ('' for none).

ALTER TABLE templates ADD COLUMN code_prefix VARCHAR(8) NOT NULL DEFAULT '' AFTER validity_hours;
