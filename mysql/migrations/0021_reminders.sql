-- Reminders (issue 18). A template's expiry reminders: remind_before
-- (whole seconds; 0: none) before a coupon's valid_end, on
-- remind_channels (a comma list: inbox,sms); and remind_lead, how long
-- before issue_start the users who asked are reminded that it opens.
ALTER TABLE templates
	ADD COLUMN remind_before   BIGINT      NOT NULL DEFAULT 0,
	ADD COLUMN remind_channels VARCHAR(32) NOT NULL DEFAULT '',
	ADD COLUMN remind_lead     BIGINT      NOT NULL DEFAULT 300;

-- When the coupon's expiry reminder was recorded (NULL: not yet), and the
-- reminder sweep's index: WHERE template_id = ? AND status = 'available'
-- AND reminded_at IS NULL AND valid_end > now AND valid_end <= now +
-- remind_before ORDER BY valid_end, one range. A coupon reminded, used or
-- expired moves out of the range, so a batch never walks over the coupons
-- the batches before it took.
ALTER TABLE coupons
	ADD COLUMN reminded_at DATETIME(6) NULL,
	ADD INDEX coupons_remind_due (template_id, status, reminded_at, valid_end);
