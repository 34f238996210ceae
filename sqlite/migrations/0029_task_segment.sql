-- segment is the rule whose users a task targets instead of an uploaded
-- file (quan.Task.Segment); '' for a task of a file. The users it matched
-- when the task was created are the task's file.
ALTER TABLE tasks ADD COLUMN segment TEXT NOT NULL DEFAULT '';
