-- The expiry sweeper reads only available coupons along (status,
-- valid_end): the index keeps only those. A coupon that expires, or is
-- used, leaves it instead of moving to another place in it, and the
-- index no longer grows with every coupon ever spent. A million expiries
-- in the sweeper's batches of 10,000 (2 cores, the two binaries in turn)
-- went from 5.7–6.4 s to 4.2–4.8 s.
DROP INDEX coupons_status_valid_end;
CREATE INDEX coupons_available_valid_end ON coupons (status, valid_end) WHERE status = 'available';
