-- Budgets and period limits of templates (quan.TemplateSpec.Budget,
-- PerUserDaily, PerUserWeekly): 0 sets none.
ALTER TABLE templates
	ADD COLUMN budget          BIGINT NOT NULL DEFAULT 0,
	ADD COLUMN per_user_daily  BIGINT NOT NULL DEFAULT 0,
	ADD COLUMN per_user_weekly BIGINT NOT NULL DEFAULT 0;

-- What the budget of a template with one holds (quan.BudgetUsage), in fen:
-- reserved by the coupons locked for orders, spent by those used. The
-- wallet's writes move them in the transaction that changes the coupons
-- (the row lock orders concurrent moves), and a move that would take more
-- than is left changes nothing. A row is made at the first move of a
-- template whose budget is set (its budget is frozen once it leaves draft).
CREATE TABLE template_budgets (
	template_id BIGINT NOT NULL PRIMARY KEY,
	budget      BIGINT NOT NULL,
	reserved    BIGINT NOT NULL DEFAULT 0,
	spent       BIGINT NOT NULL DEFAULT 0,
	CONSTRAINT template_budgets_within CHECK (reserved >= 0 AND spent >= 0 AND reserved + spent <= budget)
) ENGINE = InnoDB;
