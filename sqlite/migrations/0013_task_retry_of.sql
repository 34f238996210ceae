-- retry_of is the finished task whose retryable failed rows a task tries
-- again (quan.Task.RetryOf), 0 for a task of an uploaded file.
ALTER TABLE tasks ADD COLUMN retry_of INTEGER NOT NULL DEFAULT 0;
