-- Per-template stacking (issue 20): which coupons a coupon may be used
-- with in one order (any, exclusive, withShop, withPlatform), and its
-- priority (0 … 1000: ties between combinations, and the order discounts
-- apply). Templates stored before stack as quan always stacked: any.
ALTER TABLE templates ADD COLUMN stacking TEXT    NOT NULL DEFAULT 'any';
ALTER TABLE templates ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
