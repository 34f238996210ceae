-- The merchant's statistics (quan.StatsStore): counters per template that
-- every transaction changing coupons adds to (quan.StatsDelta), so that
-- reading them scans no coupon. Archiving moves coupons and leaves the
-- counters alone: they count the coupons of both tables.
--
-- Each template's counters are spread over slots (0 … 7), a transaction
-- adding to one slot it picks at random: the row an addition locks until
-- its transaction commits is then shared by an eighth of the writers, and
-- wallet changes of one template in a flash sale do not queue on one row.
-- Readers sum the slots.
--
-- A wallet swap of one coupon (SwapCoupons) adds to a slot in the UPDATE
-- of the coupon itself, a join that changes rows but makes none: after the
-- first transaction that counts a template (an hour), every slot of it has
-- a row, of 0 until something adds to it (mysql/stats.go,
-- ensureStatsRows). Rows of 0 change no sum.

CREATE TABLE template_stats (
	template_id         BIGINT  NOT NULL,
	slot                TINYINT NOT NULL,
	shop_no             BIGINT  NOT NULL,
	issued_distribution BIGINT  NOT NULL DEFAULT 0,
	issued_claim        BIGINT  NOT NULL DEFAULT 0,
	issued_code         BIGINT  NOT NULL DEFAULT 0,
	-- The coupons in each status now: over the slots, they add up to the
	-- issued (a slot alone may go below zero).
	available           BIGINT  NOT NULL DEFAULT 0,
	locked              BIGINT  NOT NULL DEFAULT 0,
	used                BIGINT  NOT NULL DEFAULT 0,
	expired             BIGINT  NOT NULL DEFAULT 0,
	revoked             BIGINT  NOT NULL DEFAULT 0,
	-- The discount the used coupons took off their orders.
	discount_fen        BIGINT  NOT NULL DEFAULT 0,
	PRIMARY KEY (template_id, slot),
	-- A shop's totals: WHERE shop_no = ?.
	INDEX template_stats_shop (shop_no)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Coupons issued and used per template and hour (its start, UTC). used
-- counts the coupons used in the hour and not refunded since.
CREATE TABLE template_stats_hourly (
	template_id BIGINT      NOT NULL,
	hour        DATETIME(6) NOT NULL,
	slot        TINYINT     NOT NULL,
	shop_no     BIGINT      NOT NULL,
	issued      BIGINT      NOT NULL DEFAULT 0,
	used        BIGINT      NOT NULL DEFAULT 0,
	PRIMARY KEY (template_id, hour, slot),
	INDEX template_stats_hourly_shop (shop_no, hour),
	INDEX template_stats_hourly_hour (hour)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Claims that got no coupon, by template: decided_by 'cache' for those
-- refused before the store (their answer's code: sold_out, rate_limited,
-- ...; flushed by the process that refused them, see quan.RefusalCounter),
-- 'store' for those the store failed (their reason).
CREATE TABLE claim_refusals (
	template_id BIGINT      NOT NULL,
	decided_by  VARCHAR(8)  NOT NULL,
	code        VARCHAR(64) NOT NULL,
	n           BIGINT      NOT NULL,
	PRIMARY KEY (template_id, decided_by, code)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- The counters of the coupons and claims stored so far, in slot 0: a scan
-- of each, once.
INSERT INTO template_stats (template_id, slot, shop_no, issued_distribution, issued_claim, issued_code,
	available, locked, used, expired, revoked, discount_fen)
SELECT template_id, 0, MAX(shop_no),
	SUM(source = 'distribution'), SUM(source = 'claim'), SUM(source = 'code'),
	SUM(status = 'available'), SUM(status = 'locked'), SUM(status = 'used'),
	SUM(status = 'expired'), SUM(status = 'revoked'),
	SUM(CASE WHEN status = 'used' THEN discount ELSE 0 END)
FROM (
	SELECT template_id, shop_no, source, status, discount FROM coupons
	UNION ALL
	SELECT template_id, shop_no, source, status, discount FROM coupons_archive
) c
GROUP BY template_id;

INSERT INTO template_stats_hourly (template_id, hour, slot, shop_no, issued, used)
SELECT template_id, hour, 0, MAX(shop_no), SUM(issued), SUM(used) FROM (
	SELECT template_id, shop_no, DATE_FORMAT(created_at, '%Y-%m-%d %H:00:00') AS hour, 1 AS issued, 0 AS used FROM coupons
	UNION ALL
	SELECT template_id, shop_no, DATE_FORMAT(created_at, '%Y-%m-%d %H:00:00'), 1, 0 FROM coupons_archive
	UNION ALL
	SELECT template_id, shop_no, DATE_FORMAT(updated_at, '%Y-%m-%d %H:00:00'), 0, 1 FROM coupons WHERE status = 'used'
	UNION ALL
	SELECT template_id, shop_no, DATE_FORMAT(updated_at, '%Y-%m-%d %H:00:00'), 0, 1 FROM coupons_archive WHERE status = 'used'
) c
GROUP BY template_id, hour;

INSERT INTO claim_refusals (template_id, decided_by, code, n)
SELECT template_id, 'store', reason, COUNT(*) FROM claims WHERE status = 'failed' GROUP BY template_id, reason;
