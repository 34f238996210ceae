-- Why a running task is stuck while its runner tries again
-- (quan.Task.Stalled): the error's code, the backend down, the message,
-- and since when. stalled_code '' is a task that is not stuck.
ALTER TABLE tasks ADD COLUMN stalled_code TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN stalled_backend TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN stalled_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN stalled_since INTEGER;
