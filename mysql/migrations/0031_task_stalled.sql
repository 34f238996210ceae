-- Why a running task is stuck while its runner tries again
-- (quan.Task.Stalled): the error's code, the backend down, the message,
-- and since when. stalled_code '' is a task that is not stuck.
ALTER TABLE tasks
	ADD COLUMN stalled_code VARCHAR(64) NOT NULL DEFAULT '',
	ADD COLUMN stalled_backend VARCHAR(64) NOT NULL DEFAULT '',
	ADD COLUMN stalled_reason TEXT NOT NULL DEFAULT (''),
	ADD COLUMN stalled_since DATETIME(6) NULL;
