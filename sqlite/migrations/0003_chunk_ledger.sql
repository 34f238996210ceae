-- Chunks of a distribution may be applied in any order and more than once
-- (a bus redelivers them): task_chunks records each chunk applied, in the
-- chunk's transaction, so a second application is refused, and
-- chunks_total says how many chunks the file has once it was read to its
-- end (0 until then). The task is done when chunks_done reaches it.

ALTER TABLE tasks ADD COLUMN chunks_total INTEGER NOT NULL DEFAULT 0;

CREATE TABLE task_chunks (
	task_id INTEGER NOT NULL REFERENCES tasks (id),
	seq     INTEGER NOT NULL,
	PRIMARY KEY (task_id, seq)
) STRICT, WITHOUT ROWID;
