-- count_blank is how many blank rows lie among a task's data rows
-- (quan.TaskCounts.Blank): rows of the file that hold no user, counted
-- apart from its rows and never as failures.
ALTER TABLE tasks ADD COLUMN count_blank BIGINT NOT NULL DEFAULT 0;
