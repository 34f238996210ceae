-- Rules of templates (issue 20). A template's eligibility and applies
-- rules in CEL ('' for none) are version 0 of its rules; a change of the
-- rules once it is active is a row of template_rules, version 1, 2, …,
-- in force from effective_at (Unix microseconds, UTC) on. Versions are
-- never changed: a coupon keeps the version in force when it was issued
-- (its created_at), so no column of coupons is needed to know it.
ALTER TABLE templates ADD COLUMN eligibility TEXT NOT NULL DEFAULT '';
ALTER TABLE templates ADD COLUMN applies     TEXT NOT NULL DEFAULT '';

CREATE TABLE template_rules (
	template_id     INTEGER NOT NULL REFERENCES templates (id),
	version         INTEGER NOT NULL CHECK (version > 0),
	eligibility     TEXT    NOT NULL,
	applies         TEXT    NOT NULL,
	effective_at    INTEGER NOT NULL,
	apply_to_issued INTEGER NOT NULL,
	created_by      TEXT    NOT NULL,
	created_at      INTEGER NOT NULL,
	PRIMARY KEY (template_id, version)
) STRICT, WITHOUT ROWID;

-- Distribution rows the template's eligibility rule refused.
ALTER TABLE tasks ADD COLUMN failed_not_eligible INTEGER NOT NULL DEFAULT 0;
