-- Users who asked to be reminded when a template opens for claims (预约):
-- one row per template and user; notified_at is when the reminder was
-- recorded (NULL: not yet). Times are INTEGER Unix microseconds in UTC.
CREATE TABLE template_reminders (
	template_id INTEGER NOT NULL,
	user_id     INTEGER NOT NULL,
	created_at  INTEGER NOT NULL,
	notified_at INTEGER,
	PRIMARY KEY (template_id, user_id)
) STRICT, WITHOUT ROWID;

-- The opening sweep takes a template's subscribers not notified yet in
-- batches; the ones notified leave the index, so a million subscribers
-- are walked once.
CREATE INDEX template_reminders_due ON template_reminders (template_id, user_id) WHERE notified_at IS NULL;

-- A user's list: WHERE user_id = ?.
CREATE INDEX template_reminders_user ON template_reminders (user_id, template_id);
