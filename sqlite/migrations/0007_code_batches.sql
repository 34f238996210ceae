-- Redemption codes (兑换码): a merchant's batch of codes for a template,
-- each redeemed once by a user for one coupon.

CREATE TABLE code_batches (
	id          INTEGER PRIMARY KEY,
	template_id INTEGER NOT NULL,
	shop_no     INTEGER NOT NULL,
	count       INTEGER NOT NULL,
	generated   INTEGER NOT NULL DEFAULT 0,
	status      TEXT    NOT NULL,
	created_by  TEXT    NOT NULL,
	created_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL
) STRICT;

-- Batches a dead process left generating.
CREATE INDEX code_batches_status ON code_batches (status);

CREATE TABLE redeem_codes (
	code        TEXT    NOT NULL PRIMARY KEY,
	batch_id    INTEGER NOT NULL,
	template_id INTEGER NOT NULL,
	user_id     INTEGER NOT NULL DEFAULT 0, -- 0 until redeemed
	coupon_id   INTEGER NOT NULL DEFAULT 0,
	redeemed_at INTEGER
) STRICT, WITHOUT ROWID;

-- The export of a batch, in code order.
CREATE INDEX redeem_codes_batch_code ON redeem_codes (batch_id, code);
