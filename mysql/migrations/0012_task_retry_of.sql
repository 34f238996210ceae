-- retry_of is the finished task whose retryable failed rows a task tries
-- again (quan.Task.RetryOf), 0 for a task of an uploaded file. Added in
-- place (INSTANT): the table is not copied.
ALTER TABLE tasks ADD COLUMN retry_of BIGINT NOT NULL DEFAULT 0;
