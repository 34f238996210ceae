-- trace_parent is the W3C traceparent of the request that created a task
-- (quan.Task.TraceParent), for the runner to continue its trace; '' when
-- the task was not traced.
ALTER TABLE tasks ADD COLUMN trace_parent TEXT NOT NULL DEFAULT '';
