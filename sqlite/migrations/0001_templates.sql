-- Coupon templates and their audit trail.
--
-- Times are INTEGER Unix microseconds in UTC; a time that does not apply
-- (the start and end of a relative validity) is NULL. Money is INTEGER fen.

CREATE TABLE templates (
	-- AUTOINCREMENT so an id is never reused: audit entries, coupons and
	-- logs keep pointing at the template they were written for.
	id             INTEGER PRIMARY KEY AUTOINCREMENT,
	shop_no        INTEGER NOT NULL CHECK (shop_no > 0),
	name           TEXT    NOT NULL,
	description    TEXT    NOT NULL DEFAULT '',
	kind           TEXT    NOT NULL,
	rule_amount    INTEGER NOT NULL DEFAULT 0,
	rule_threshold INTEGER NOT NULL DEFAULT 0,
	rule_rate      INTEGER NOT NULL DEFAULT 0,
	rule_cap       INTEGER NOT NULL DEFAULT 0,
	rule_step      INTEGER NOT NULL DEFAULT 0,
	source         TEXT    NOT NULL,
	scope_kind     TEXT    NOT NULL,
	scope_ids      TEXT    NOT NULL DEFAULT '[]', -- JSON array of strings
	issue_start    INTEGER NOT NULL,
	issue_end      INTEGER NOT NULL,
	validity_kind  TEXT    NOT NULL,
	validity_start INTEGER,
	validity_end   INTEGER,
	validity_hours INTEGER NOT NULL DEFAULT 0,
	per_user_limit INTEGER NOT NULL,
	stock          INTEGER NOT NULL CHECK (stock >= 0),
	total_stock    INTEGER NOT NULL,
	status         TEXT    NOT NULL,
	created_by     TEXT    NOT NULL,
	created_at     INTEGER NOT NULL,
	updated_at     INTEGER NOT NULL
) STRICT;

-- A merchant's list, newest first: WHERE shop_no = ? ORDER BY id DESC,
-- optionally narrowed by status, the filter merchants use most. Kind and
-- name filters are applied to the rows of the shop these indexes find.
CREATE INDEX templates_shop_id ON templates (shop_no, id DESC);
CREATE INDEX templates_shop_status_id ON templates (shop_no, status, id DESC);

CREATE TABLE template_audit (
	id          INTEGER PRIMARY KEY,
	template_id INTEGER NOT NULL REFERENCES templates (id),
	shop_no     INTEGER NOT NULL,
	actor       TEXT    NOT NULL,
	action      TEXT    NOT NULL,
	at          INTEGER NOT NULL,
	changes     TEXT    NOT NULL -- JSON array of quan.FieldChange
) STRICT;

CREATE INDEX template_audit_template_id ON template_audit (template_id, id);
