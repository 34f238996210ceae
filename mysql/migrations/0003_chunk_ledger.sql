-- Chunks of a distribution may be applied in any order and more than once
-- (a bus redelivers them): task_chunks records each chunk applied, in the
-- chunk's transaction, so a second application is refused, and
-- chunks_total says how many chunks the file has once it was read to its
-- end (0 until then). The task is done when chunks_done reaches it.

ALTER TABLE tasks ADD COLUMN chunks_total BIGINT NOT NULL DEFAULT 0 AFTER chunks_done;

CREATE TABLE task_chunks (
	task_id BIGINT NOT NULL,
	seq     BIGINT NOT NULL,
	PRIMARY KEY (task_id, seq),
	CONSTRAINT task_chunks_task FOREIGN KEY (task_id) REFERENCES tasks (id)
) ENGINE = InnoDB;
