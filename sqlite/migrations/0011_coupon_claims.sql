-- A claim that issued a coupon is recorded on the coupon: claim_id (the
-- claim's id, quan.NewClaimID) and claimed_at (its At, in microseconds).
-- The claims table keeps the claims that failed, and those issued before
-- this migration. A row of its own for every issued claim was a tenth of
-- the embedded server's CPU in the flash-sale benchmark (a random key in
-- its B-tree, and the pages that writes to the WAL). A claim's coupon is
-- found by (user_id, template_id), the prefix of coupons_user_template_seq,
-- and its claim_id; archiving a coupon of a claim writes the claim's row
-- then (see ArchiveCoupons).
ALTER TABLE coupons ADD COLUMN claim_id TEXT;
ALTER TABLE coupons ADD COLUMN claimed_at INTEGER;
