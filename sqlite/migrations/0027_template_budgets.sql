-- Budgets and period limits of templates (quan.TemplateSpec.Budget,
-- PerUserDaily, PerUserWeekly): 0 sets none.
ALTER TABLE templates ADD COLUMN budget INTEGER NOT NULL DEFAULT 0 CHECK (budget >= 0);
ALTER TABLE templates ADD COLUMN per_user_daily INTEGER NOT NULL DEFAULT 0 CHECK (per_user_daily >= 0);
ALTER TABLE templates ADD COLUMN per_user_weekly INTEGER NOT NULL DEFAULT 0 CHECK (per_user_weekly >= 0);

-- What the budget of a template with one holds (quan.BudgetUsage), in fen:
-- reserved by the coupons locked for orders, spent by those used. The
-- wallet's writes move them in the transaction that changes the coupons,
-- and a move that would take more than is left changes nothing; the CHECK
-- is the last guard. A row is made at the first move of a template whose
-- budget is set (its budget is frozen once it leaves draft).
CREATE TABLE template_budgets (
	template_id INTEGER NOT NULL PRIMARY KEY,
	budget      INTEGER NOT NULL,
	reserved    INTEGER NOT NULL DEFAULT 0,
	spent       INTEGER NOT NULL DEFAULT 0,
	CHECK (reserved >= 0 AND spent >= 0 AND reserved + spent <= budget)
) STRICT;
