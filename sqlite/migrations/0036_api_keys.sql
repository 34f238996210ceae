-- Service keys (quan.APIKey): the programs around quan call the API with
-- them. Only the key's HMAC under the store's apikeys secret is kept,
-- which a request's key is looked up by.
CREATE TABLE api_keys (
	id           INTEGER PRIMARY KEY AUTOINCREMENT,
	name         TEXT    NOT NULL,
	shop_no      INTEGER NOT NULL DEFAULT 0 CHECK (shop_no >= 0),
	scopes       TEXT    NOT NULL,
	hash         BLOB    NOT NULL UNIQUE,
	hint         TEXT    NOT NULL,
	created_at   INTEGER NOT NULL,
	created_by   TEXT    NOT NULL,
	last_used_at INTEGER,
	revoked_at   INTEGER
) STRICT;

-- Orders refunded (quan.RefundStore): a refund applies to an order once,
-- and a refunded order settles nothing more.
CREATE TABLE refunded_orders (
	user_id     INTEGER NOT NULL,
	order_id    TEXT    NOT NULL,
	refunded_at INTEGER NOT NULL,
	PRIMARY KEY (user_id, order_id)
) STRICT;
