-- Service keys (quan.APIKey): the programs around quan call the API with
-- them. Only the key's HMAC under the store's apikeys secret is kept,
-- which a request's key is looked up by.
CREATE TABLE api_keys (
	id           BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
	name         VARCHAR(255) NOT NULL,
	shop_no      BIGINT       NOT NULL DEFAULT 0,
	scopes       VARCHAR(255) NOT NULL,
	hash         VARBINARY(32) NOT NULL,
	hint         VARCHAR(16)  NOT NULL,
	created_at   DATETIME(6)  NOT NULL,
	created_by   VARCHAR(255) NOT NULL,
	last_used_at DATETIME(6)  NULL,
	revoked_at   DATETIME(6)  NULL,
	UNIQUE KEY api_keys_hash (hash),
	CHECK (shop_no >= 0)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Orders refunded (quan.RefundStore): a refund applies to an order once,
-- and a refunded order settles nothing more.
CREATE TABLE refunded_orders (
	user_id     BIGINT       NOT NULL,
	order_id    VARCHAR(64)  NOT NULL,
	refunded_at DATETIME(6)  NOT NULL,
	PRIMARY KEY (user_id, order_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
