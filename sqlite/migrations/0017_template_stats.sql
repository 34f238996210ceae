-- The merchant's statistics (quan.StatsStore): counters per template that
-- every transaction changing coupons adds to, one row per template it
-- touched (quan.StatsDelta), so that reading them scans no coupon.
-- Archiving moves coupons and leaves the counters alone: they count the
-- coupons of both tables.

CREATE TABLE template_stats (
	template_id         INTEGER NOT NULL PRIMARY KEY,
	shop_no             INTEGER NOT NULL,
	issued_distribution INTEGER NOT NULL DEFAULT 0,
	issued_claim        INTEGER NOT NULL DEFAULT 0,
	issued_code         INTEGER NOT NULL DEFAULT 0,
	-- The coupons in each status now: they add up to the issued.
	available           INTEGER NOT NULL DEFAULT 0,
	locked              INTEGER NOT NULL DEFAULT 0,
	used                INTEGER NOT NULL DEFAULT 0,
	expired             INTEGER NOT NULL DEFAULT 0,
	revoked             INTEGER NOT NULL DEFAULT 0,
	-- The discount the used coupons took off their orders.
	discount_fen        INTEGER NOT NULL DEFAULT 0
) STRICT;

-- A shop's totals: WHERE shop_no = ?.
CREATE INDEX template_stats_shop ON template_stats (shop_no);

-- Coupons issued and used per template and hour (Unix microseconds of
-- the hour's start, UTC). used counts the coupons used in the hour and not
-- refunded since.
CREATE TABLE template_stats_hourly (
	template_id INTEGER NOT NULL,
	hour        INTEGER NOT NULL,
	shop_no     INTEGER NOT NULL,
	issued      INTEGER NOT NULL DEFAULT 0,
	used        INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (template_id, hour)
) STRICT, WITHOUT ROWID;

CREATE INDEX template_stats_hourly_shop ON template_stats_hourly (shop_no, hour);
CREATE INDEX template_stats_hourly_hour ON template_stats_hourly (hour);

-- Claims that got no coupon, by template: decided_by 'cache' for those
-- refused before the store (their answer's code: sold_out, rate_limited,
-- ...; flushed by the process that refused them, see quan.RefusalCounter),
-- 'store' for those the store failed (their reason).
CREATE TABLE claim_refusals (
	template_id INTEGER NOT NULL,
	decided_by  TEXT    NOT NULL,
	code        TEXT    NOT NULL,
	n           INTEGER NOT NULL,
	PRIMARY KEY (template_id, decided_by, code)
) STRICT, WITHOUT ROWID;

-- The counters of the coupons and claims stored so far: a scan of each,
-- once.
INSERT INTO template_stats (template_id, shop_no, issued_distribution, issued_claim, issued_code,
	available, locked, used, expired, revoked, discount_fen)
SELECT template_id, max(shop_no),
	sum(source = 'distribution'), sum(source = 'claim'), sum(source = 'code'),
	sum(status = 'available'), sum(status = 'locked'), sum(status = 'used'),
	sum(status = 'expired'), sum(status = 'revoked'),
	sum(CASE WHEN status = 'used' THEN discount ELSE 0 END)
FROM (
	SELECT template_id, shop_no, source, status, discount FROM coupons
	UNION ALL
	SELECT template_id, shop_no, source, status, discount FROM coupons_archive
)
GROUP BY template_id;

INSERT INTO template_stats_hourly (template_id, hour, shop_no, issued, used)
SELECT template_id, hour, max(shop_no), sum(issued), sum(used) FROM (
	SELECT template_id, shop_no, created_at / 3600000000 * 3600000000 AS hour, 1 AS issued, 0 AS used FROM coupons
	UNION ALL
	SELECT template_id, shop_no, created_at / 3600000000 * 3600000000, 1, 0 FROM coupons_archive
	UNION ALL
	SELECT template_id, shop_no, updated_at / 3600000000 * 3600000000, 0, 1 FROM coupons WHERE status = 'used'
	UNION ALL
	SELECT template_id, shop_no, updated_at / 3600000000 * 3600000000, 0, 1 FROM coupons_archive WHERE status = 'used'
)
GROUP BY template_id, hour;

INSERT INTO claim_refusals (template_id, decided_by, code, n)
SELECT template_id, 'store', reason, count(*) FROM claims WHERE status = 'failed' GROUP BY template_id, reason;
