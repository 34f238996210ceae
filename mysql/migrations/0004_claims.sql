-- Flash-sale claims, as the store decided them: issued (with the coupon)
-- or failed (with the reason). A claim pending in the cache and on the bus
-- has no row yet. The id is the claim's own (see quan.NewClaimID), so a
-- claim delivered twice is decided once.

CREATE TABLE claims (
	id          VARCHAR(64)  NOT NULL PRIMARY KEY,
	template_id BIGINT       NOT NULL,
	user_id     BIGINT       NOT NULL,
	status      VARCHAR(16)  NOT NULL,
	coupon_id   BIGINT       NOT NULL DEFAULT 0,
	reason      VARCHAR(512) NOT NULL DEFAULT '',
	at          DATETIME(6)  NOT NULL,
	decided_at  DATETIME(6)  NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
