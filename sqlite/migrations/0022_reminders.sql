-- Reminders (issue 18). A template's expiry reminders: remind_before
-- (whole seconds; 0: none) before a coupon's valid_end, on
-- remind_channels (a comma list: inbox,sms); and remind_lead, how long
-- before issue_start the users who asked are reminded that it opens.
ALTER TABLE templates ADD COLUMN remind_before   INTEGER NOT NULL DEFAULT 0;
ALTER TABLE templates ADD COLUMN remind_channels TEXT    NOT NULL DEFAULT '';
ALTER TABLE templates ADD COLUMN remind_lead     INTEGER NOT NULL DEFAULT 300;

-- When the coupon's expiry reminder was recorded (NULL: not yet).
ALTER TABLE coupons ADD COLUMN reminded_at INTEGER;

-- The reminder sweep: WHERE template_id = ? AND status = 'available' AND
-- reminded_at IS NULL AND valid_end > now AND valid_end <= now + remind_before.
-- A coupon leaves the index when reminded, used or expired, so a batch
-- never walks over the coupons the batches before it took. A distribution
-- appends to it as to coupons_available_valid_end: its coupons have one
-- template, one valid_end a chunk and rising ids.
CREATE INDEX coupons_remind_due ON coupons (template_id, valid_end) WHERE status = 'available' AND reminded_at IS NULL;
