-- Rules of templates (issue 20). A template's eligibility and applies
-- rules in CEL ('' for none) are version 0 of its rules; a change of the
-- rules once it is active is a row of template_rules, version 1, 2, …,
-- in force from effective_at on. Versions are never changed: a coupon
-- keeps the version in force when it was issued (its created_at), so no
-- column of coupons is needed to know it. TEXT columns cannot have a
-- literal default before MySQL 8.0.13, so the rules are VARCHAR: a rule
-- is at most rules.DefaultMaxLength (4096) bytes.
ALTER TABLE templates
	ADD COLUMN eligibility VARCHAR(4096) NOT NULL DEFAULT '',
	ADD COLUMN applies     VARCHAR(4096) NOT NULL DEFAULT '';

CREATE TABLE template_rules (
	template_id     BIGINT        NOT NULL,
	version         BIGINT        NOT NULL,
	eligibility     VARCHAR(4096) NOT NULL,
	applies         VARCHAR(4096) NOT NULL,
	effective_at    DATETIME(6)   NOT NULL,
	apply_to_issued BOOLEAN       NOT NULL,
	created_by      VARCHAR(255)  NOT NULL,
	created_at      DATETIME(6)   NOT NULL,
	PRIMARY KEY (template_id, version)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Distribution rows the template's eligibility rule refused.
ALTER TABLE tasks ADD COLUMN failed_not_eligible BIGINT NOT NULL DEFAULT 0;
