-- A failed claim's reason is a code (quan.ClaimReasons) from this
-- migration on: the reaper wrote "abandoned: the claim was not handed off
-- before its process stopped", a dead letter "hand-off failed: " and the
-- bus's error, which MySQL's claim_refusals.code (64 characters) cannot
-- hold. Their records take the codes abandoned and handoff_failed, and
-- their counts are summed under them.
UPDATE claims SET reason = 'abandoned' WHERE status = 'failed' AND reason LIKE 'abandoned:%';
UPDATE claims SET reason = 'handoff_failed' WHERE status = 'failed' AND reason LIKE 'hand-off failed:%';

INSERT INTO claim_refusals (template_id, decided_by, code, n)
SELECT template_id, 'store', CASE WHEN code LIKE 'abandoned:%' THEN 'abandoned' ELSE 'handoff_failed' END, sum(n)
FROM claim_refusals
WHERE decided_by = 'store' AND (code LIKE 'abandoned:%' OR code LIKE 'hand-off failed:%')
GROUP BY 1, 3
ON CONFLICT (template_id, decided_by, code) DO UPDATE SET n = n + excluded.n;

DELETE FROM claim_refusals WHERE decided_by = 'store' AND (code LIKE 'abandoned:%' OR code LIKE 'hand-off failed:%');
