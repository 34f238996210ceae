-- Notifications owed to users (issue 18): the outbox of email and SMS the
-- dispatchers send, and the inbox and popup entries users read. Each is
-- recorded once under (source, user_id, channel), in the transaction of
-- what causes it. A broadcast is an inbox or popup entry with user_id 0
-- and a task_id: every holder of a coupon of the task sees it, so a
-- distribution to a million users writes one row per channel.
--
-- Times are INTEGER Unix microseconds in UTC.

CREATE TABLE notifications (
	-- AUTOINCREMENT: ids are shown to users and marked read, and the
	-- retention sweep deletes the newest rows too; an id is never reused.
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	source     TEXT    NOT NULL,              -- task:42, expiring:coupon:9, opening:template:7
	user_id    INTEGER NOT NULL,              -- 0: a broadcast to the holders of task_id
	task_id    INTEGER,
	channel    TEXT    NOT NULL,              -- inbox, popup, email, sms
	status     TEXT    NOT NULL,              -- queued, deferred, sent, failed
	reason     TEXT    NOT NULL DEFAULT '',
	address    TEXT    NOT NULL DEFAULT '',
	kind       TEXT    NOT NULL,              -- issued, expiring, opening
	lang       TEXT    NOT NULL DEFAULT '',
	vars       TEXT    NOT NULL DEFAULT '{}', -- JSON of quan.MessageVars
	attempts   INTEGER NOT NULL DEFAULT 0,
	-- When a queued or deferred message is due; while a dispatcher holds
	-- it, the end of the lease. NULL once sent or failed, and for inbox
	-- and popup entries: they never enter notifications_due.
	next_at    INTEGER,
	owner      TEXT    NOT NULL DEFAULT '',   -- the dispatcher holding it; '' once finished
	expires_at INTEGER,                       -- popups: not shown after
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
) STRICT;

-- The key: a source records each message once, and counts its own by
-- channel and status along it (WHERE source = ?).
CREATE UNIQUE INDEX notifications_key ON notifications (source, user_id, channel);

-- The dispatchers: WHERE channel = ? AND next_at <= ? ORDER BY next_at.
-- Only messages still to send are in it; sent ones leave it.
CREATE INDEX notifications_due ON notifications (channel, next_at) WHERE next_at IS NOT NULL;

-- A user's own inbox and popups, newest first. Email and SMS rows, the
-- bulk of the table, are not in them.
CREATE INDEX notifications_inbox ON notifications (user_id, id) WHERE channel = 'inbox';
CREATE INDEX notifications_popup ON notifications (user_id, id) WHERE channel = 'popup';

-- The broadcasts of the tasks a user holds coupons of.
CREATE INDEX notifications_broadcast ON notifications (task_id, channel) WHERE user_id = 0;

-- The retention sweep of inbox and popup entries.
CREATE INDEX notifications_in_app_created ON notifications (created_at) WHERE channel IN ('inbox', 'popup');

-- A user's read (inbox) or shown (popup) mark, written only when the user
-- reads or acks. created_at is the message's, so the retention sweep
-- deletes marks with their messages, a bounded batch at a time, even the
-- million marks of one broadcast.
CREATE TABLE notification_marks (
	notification_id INTEGER NOT NULL,
	user_id         INTEGER NOT NULL,
	marked_at       INTEGER NOT NULL,
	created_at      INTEGER NOT NULL,
	PRIMARY KEY (notification_id, user_id)
) STRICT;

CREATE INDEX notification_marks_created ON notification_marks (created_at);

-- A user's contact on file and opt-outs.
CREATE TABLE contacts (
	user_id    INTEGER PRIMARY KEY,
	phone      TEXT    NOT NULL DEFAULT '', -- E.164
	mail       TEXT    NOT NULL DEFAULT '',
	lang       TEXT    NOT NULL DEFAULT 'zh',
	opt_out    TEXT    NOT NULL DEFAULT '', -- comma list: email,popup,sms
	updated_at INTEGER NOT NULL
) STRICT;
