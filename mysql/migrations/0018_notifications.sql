-- Notifications owed to users (issue 18): the outbox of email and SMS the
-- dispatchers send, and the inbox and popup entries users read, each
-- recorded once under (source, user_id, channel). A broadcast is an inbox
-- or popup entry with user_id 0 and a task_id: every holder of a coupon of
-- the task sees it, so a distribution to a million users writes one row
-- per channel. See sqlite/migrations/0022_notifications.sql.

CREATE TABLE notifications (
	id         BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
	source     VARCHAR(64)  NOT NULL,
	user_id    BIGINT       NOT NULL,               -- 0: a broadcast to the holders of task_id
	task_id    BIGINT       NULL,
	channel    VARCHAR(8)   NOT NULL,               -- inbox, popup, email, sms
	status     VARCHAR(16)  NOT NULL,               -- queued, deferred, sent, failed
	reason     VARCHAR(512) NOT NULL DEFAULT '',
	address    VARCHAR(254) NOT NULL DEFAULT '',
	kind       VARCHAR(16)  NOT NULL,
	lang       VARCHAR(8)   NOT NULL DEFAULT '',
	vars       TEXT         NOT NULL,               -- JSON of quan.MessageVars
	attempts   INT          NOT NULL DEFAULT 0,
	-- When a queued or deferred message is due, or while a dispatcher
	-- holds it the end of the lease. NULL once sent or failed and for
	-- inbox and popup entries, which the range next_at <= ? then skips.
	next_at    DATETIME(6)  NULL,
	owner      VARCHAR(128) NOT NULL DEFAULT '',
	expires_at DATETIME(6)  NULL,
	created_at DATETIME(6)  NOT NULL,
	updated_at DATETIME(6)  NOT NULL,

	UNIQUE INDEX notifications_key (source, user_id, channel),
	-- The dispatchers: WHERE channel = ? AND next_at <= ? ORDER BY next_at.
	INDEX notifications_due (channel, next_at),
	-- A user's own inbox and popups, newest first.
	INDEX notifications_user (user_id, channel, id),
	-- The broadcasts of a task: (task_id, 0, channel), apart from the
	-- task's per-user email and SMS rows.
	INDEX notifications_broadcast (task_id, user_id, channel),
	-- The retention sweep of inbox and popup entries.
	INDEX notifications_created (channel, created_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- A user's read (inbox) or shown (popup) mark, written only when the user
-- reads or acks; created_at is the message's, for the retention sweep.
CREATE TABLE notification_marks (
	notification_id BIGINT      NOT NULL,
	user_id         BIGINT      NOT NULL,
	marked_at       DATETIME(6) NOT NULL,
	created_at      DATETIME(6) NOT NULL,
	PRIMARY KEY (notification_id, user_id),
	INDEX notification_marks_created (created_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- A user's contact on file and opt-outs.
CREATE TABLE contacts (
	user_id    BIGINT       NOT NULL PRIMARY KEY,
	phone      VARCHAR(20)  NOT NULL DEFAULT '',
	mail       VARCHAR(254) NOT NULL DEFAULT '',
	lang       VARCHAR(8)   NOT NULL DEFAULT 'zh',
	opt_out    VARCHAR(64)  NOT NULL DEFAULT '',   -- comma list: email,popup,sms
	updated_at DATETIME(6)  NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
