-- Redemption codes (兑换码): a merchant's batch of codes for a template,
-- each redeemed once by a user for one coupon.

CREATE TABLE code_batches (
	id          BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
	template_id BIGINT       NOT NULL,
	shop_no     BIGINT       NOT NULL,
	count       BIGINT       NOT NULL,
	generated   BIGINT       NOT NULL DEFAULT 0,
	status      VARCHAR(16)  NOT NULL,
	created_by  VARCHAR(255) NOT NULL,
	created_at  DATETIME(6)  NOT NULL,
	updated_at  DATETIME(6)  NOT NULL,
	INDEX code_batches_status (status)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE redeem_codes (
	code        VARCHAR(24) NOT NULL PRIMARY KEY,
	batch_id    BIGINT      NOT NULL,
	template_id BIGINT      NOT NULL,
	user_id     BIGINT      NOT NULL DEFAULT 0,
	coupon_id   BIGINT      NOT NULL DEFAULT 0,
	redeemed_at DATETIME(6) NULL,
	INDEX redeem_codes_batch_code (batch_id, code)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
