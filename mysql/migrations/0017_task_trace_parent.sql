-- trace_parent is the W3C traceparent of the request that created a task
-- (quan.Task.TraceParent), for the runner to continue its trace; '' when
-- the task was not traced. Added in place (INSTANT): the table is not
-- copied.
ALTER TABLE tasks ADD COLUMN trace_parent VARCHAR(255) NOT NULL DEFAULT '';
