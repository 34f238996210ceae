-- Users who asked to be reminded when a template opens for claims (预约):
-- one row per template and user; notified_at is when the reminder was
-- recorded (NULL: not yet).
CREATE TABLE template_reminders (
	template_id BIGINT      NOT NULL,
	user_id     BIGINT      NOT NULL,
	created_at  DATETIME(6) NOT NULL,
	notified_at DATETIME(6) NULL,
	PRIMARY KEY (template_id, user_id),
	-- The opening sweep: a template's subscribers not notified yet, in
	-- batches; the ones notified move out of the range.
	INDEX template_reminders_due (template_id, notified_at, user_id),
	-- A user's list: WHERE user_id = ?.
	INDEX template_reminders_user (user_id, template_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
