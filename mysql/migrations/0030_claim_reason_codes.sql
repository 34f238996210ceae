-- A failed claim's reason is a code (quan.ClaimReasons) from this
-- migration on: the reaper wrote "abandoned: the claim was not handed off
-- before its process stopped", which claim_refusals.code (64 characters)
-- cannot hold, so it failed every time; a dead letter "hand-off failed: "
-- and the bus's error, which it held only when short. Their records take
-- the codes abandoned and handoff_failed, and their counts are summed
-- under them, in one transaction: a failure leaves them as they were.
START TRANSACTION;

UPDATE claims SET reason = 'abandoned' WHERE status = 'failed' AND reason LIKE 'abandoned:%';
UPDATE claims SET reason = 'handoff_failed' WHERE status = 'failed' AND reason LIKE 'hand-off failed:%';

INSERT INTO claim_refusals (template_id, decided_by, code, n)
SELECT template_id, 'store', code, total FROM (
	SELECT template_id, CASE WHEN code LIKE 'abandoned:%' THEN 'abandoned' ELSE 'handoff_failed' END AS code, SUM(n) AS total
	FROM claim_refusals
	WHERE decided_by = 'store' AND (code LIKE 'abandoned:%' OR code LIKE 'hand-off failed:%')
	GROUP BY 1, 2
) merged
ON DUPLICATE KEY UPDATE n = n + VALUES(n);

DELETE FROM claim_refusals WHERE decided_by = 'store' AND (code LIKE 'abandoned:%' OR code LIKE 'hand-off failed:%');

COMMIT;
