-- Flash-sale claims, as the store decided them: issued (with the coupon)
-- or failed (with the reason). A claim pending in the cache and on the bus
-- has no row yet. The id is the claim's own (see quan.NewClaimID), so a
-- claim delivered twice is decided once.

CREATE TABLE claims (
	id          TEXT    NOT NULL PRIMARY KEY,
	template_id INTEGER NOT NULL,
	user_id     INTEGER NOT NULL,
	status      TEXT    NOT NULL,
	coupon_id   INTEGER NOT NULL DEFAULT 0,
	reason      TEXT    NOT NULL DEFAULT '',
	at          INTEGER NOT NULL,
	decided_at  INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
