package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/sqlrow"
)

var _ quan.StatsStore = (*Store)(nil)

// statsSlots is how many rows each template's counters are spread over
// (see migration 0016): a transaction adds to one, picked at random.
const statsSlots = 8

// The upserts of a quan.StatsDelta: one row per template, per template and
// hour, per template and failure reason, in that order, each in template
// order (StatsDelta sorts them), so that transactions lock the rows they
// share in one order.
var (
	addTemplateStatsSQL = `INSERT INTO template_stats (template_id, slot, shop_no, ` + strings.Join(sqlrow.StatsCounters, ", ") + `)
		VALUES (?, ?, ?, ` + sqlrow.Params(len(sqlrow.StatsCounters)) + `)
		ON DUPLICATE KEY UPDATE ` + addValues(sqlrow.StatsCounters)
	addHourStatsSQL = `INSERT INTO template_stats_hourly (template_id, hour, slot, shop_no, issued, used, claimed) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON DUPLICATE KEY UPDATE issued = issued + VALUES(issued), used = used + VALUES(used), claimed = claimed + VALUES(claimed)`
	addFailedSQL = `INSERT INTO claim_refusals (template_id, decided_by, code, n) VALUES (?, 'store', ?, ?)
		ON DUPLICATE KEY UPDATE n = n + VALUES(n)`
)

// addValues is "c = c + VALUES(c)" for each column.
func addValues(cols []string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = c + " = " + c + " + VALUES(" + c + ")"
	}
	return strings.Join(parts, ", ")
}

// addStats writes d in tx, the transaction of the changes it counts, into
// one slot, picked at random.
func addStats(ctx context.Context, tx execer, d *quan.StatsDelta) error {
	return addStatsSlot(ctx, tx, d, rand.IntN(statsSlots))
}

// addStatsSlot writes d in tx into slot.
func addStatsSlot(ctx context.Context, tx execer, d *quan.StatsDelta, slot int) error {
	for _, t := range d.Templates() {
		args := append([]any{t.TemplateID, slot, t.ShopNo}, sqlrow.TemplateDeltaArgs(t)...)
		if _, err := tx.ExecContext(ctx, addTemplateStatsSQL, args...); err != nil {
			return fmt.Errorf("count the statistics of template %d: %w", t.TemplateID, err)
		}
	}
	for _, h := range d.Hours() {
		if _, err := tx.ExecContext(ctx, addHourStatsSQL, h.TemplateID, utc(h.Hour), slot, h.ShopNo, h.Issued, h.Used, h.Claimed); err != nil {
			return fmt.Errorf("count the hourly statistics of template %d: %w", h.TemplateID, err)
		}
	}
	for _, f := range d.Failures() {
		if _, err := tx.ExecContext(ctx, addFailedSQL, f.TemplateID, f.Reason, f.N); err != nil {
			return fmt.Errorf("count the failed claims of template %d: %w", f.TemplateID, err)
		}
	}
	return nil
}

// ensureStatsRows makes every slot of the rows d adds to, with counters
// 0, for SwapCoupons's one statement (swapCounted), which changes rows but
// makes none. Rows of 0 change no sum. It runs on its own, after the
// transaction that counted d: inside, it would lock every slot of the
// template until the commit.
func ensureStatsRows(ctx context.Context, db execer, d *quan.StatsDelta) error {
	for _, t := range d.Templates() {
		args := make([]any, 0, 3*statsSlots)
		for slot := range statsSlots {
			args = append(args, t.TemplateID, slot, t.ShopNo)
		}
		if _, err := db.ExecContext(ctx, `INSERT IGNORE INTO template_stats (template_id, slot, shop_no) VALUES `+
			strings.Repeat("(?, ?, ?), ", statsSlots-1)+`(?, ?, ?)`, args...); err != nil {
			return fmt.Errorf("make the statistics' rows of template %d: %w", t.TemplateID, err)
		}
	}
	for _, h := range d.Hours() {
		args := make([]any, 0, 4*statsSlots)
		for slot := range statsSlots {
			args = append(args, h.TemplateID, utc(h.Hour), slot, h.ShopNo)
		}
		if _, err := db.ExecContext(ctx, `INSERT IGNORE INTO template_stats_hourly (template_id, hour, slot, shop_no) VALUES `+
			strings.Repeat("(?, ?, ?, ?), ", statsSlots-1)+`(?, ?, ?, ?)`, args...); err != nil {
			return fmt.Errorf("make the hourly statistics' rows of template %d: %w", h.TemplateID, err)
		}
	}
	return nil
}

// statsSums selects the counters of template_stats summed.
var statsSums = func() string {
	parts := make([]string, len(sqlrow.StatsCounters))
	for i, c := range sqlrow.StatsCounters {
		parts[i] = "COALESCE(SUM(s." + c + "), 0)"
	}
	return strings.Join(parts, ", ")
}()

// TemplateStats implements quan.StatsStore: the template's slots of
// template_stats (none before its first coupon), its rows of
// template_stats_hourly in the range and of claim_refusals, all ranges of
// primary keys, in one consistent snapshot.
func (s *Store) TemplateStats(ctx context.Context, shop, id int64, r quan.StatsRange) (_ *quan.TemplateStats, err error) {
	defer s.db.unavailable(&err)
	tx, err := s.db.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("statistics of template %d: %w", id, err)
	}
	defer tx.Rollback()
	st := &quan.TemplateStats{TemplateID: id}
	query := `SELECT t.shop_no, ` + statsSums + `
		FROM templates t LEFT JOIN template_stats s ON s.template_id = t.id
		WHERE t.id = ?`
	args := []any{id}
	if shop != quan.AnyShop {
		query += ` AND t.shop_no = ?`
		args = append(args, shop)
	}
	err = tx.QueryRowContext(ctx, query+` GROUP BY t.id, t.shop_no`, args...).Scan(append([]any{&st.ShopNo}, sqlrow.StatsDests(&st.StatsCounts)...)...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, quan.Errorf(quan.ENOTFOUND, "template %d not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("statistics of template %d: %w", id, err)
	}
	first, end := r.Hours()
	if st.Hourly, err = sqlrow.Query(ctx, tx, fmt.Sprintf("hourly statistics of template %d", id), sqlrow.ScanHour,
		`SELECT hour, SUM(issued), SUM(used) FROM template_stats_hourly
		WHERE template_id = ? AND hour >= ? AND hour < ? GROUP BY hour ORDER BY hour`,
		id, utc(first), utc(end)); err != nil {
		return nil, err
	}
	if err := sqlrow.Tallies(ctx, tx, &st.StatsCounts,
		`SELECT decided_by, code, n FROM claim_refusals WHERE template_id = ?`, id); err != nil {
		return nil, fmt.Errorf("statistics of template %d: %w", id, err)
	}
	return st, nil
}

// ShopStats implements quan.StatsStore: sums over the shop's rows of
// template_stats (template_stats_shop) and template_stats_hourly
// (template_stats_hourly_shop), and over the claim_refusals of the shop's
// templates; for AnyShop over every row, the hourly ones along
// template_stats_hourly_hour.
func (s *Store) ShopStats(ctx context.Context, shop int64, r quan.StatsRange) (_ *quan.ShopStats, err error) {
	defer s.db.unavailable(&err)
	tx, err := s.db.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("statistics of shop %d: %w", shop, err)
	}
	defer tx.Rollback()
	where, args := "", []any{}
	if shop != quan.AnyShop {
		where, args = " WHERE s.shop_no = ?", []any{shop}
	}
	st := &quan.ShopStats{ShopNo: shop}
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(DISTINCT s.template_id), `+statsSums+` FROM template_stats s`+where, args...).
		Scan(append([]any{&st.Templates}, sqlrow.StatsDests(&st.StatsCounts)...)...); err != nil {
		return nil, fmt.Errorf("statistics of shop %d: %w", shop, err)
	}
	first, end := r.Hours()
	hourly := `SELECT hour, SUM(issued), SUM(used) FROM template_stats_hourly WHERE hour >= ? AND hour < ?`
	hargs := []any{utc(first), utc(end)}
	if shop != quan.AnyShop {
		hourly += ` AND shop_no = ?`
		hargs = append(hargs, shop)
	}
	if st.Hourly, err = sqlrow.Query(ctx, tx, fmt.Sprintf("hourly statistics of shop %d", shop), sqlrow.ScanHour,
		hourly+` GROUP BY hour ORDER BY hour`, hargs...); err != nil {
		return nil, err
	}
	tallies := `SELECT decided_by, code, SUM(n) FROM claim_refusals GROUP BY decided_by, code`
	if shop != quan.AnyShop {
		tallies = `SELECT r.decided_by, r.code, SUM(r.n) FROM templates t JOIN claim_refusals r ON r.template_id = t.id
			WHERE t.shop_no = ? GROUP BY r.decided_by, r.code`
	}
	if err := sqlrow.Tallies(ctx, tx, &st.StatsCounts, tallies, args...); err != nil {
		return nil, fmt.Errorf("statistics of shop %d: %w", shop, err)
	}
	return st, nil
}

// AddRefusals implements quan.StatsStore in one transaction, the counts
// in template order.
func (s *Store) AddRefusals(ctx context.Context, counts []quan.RefusalCount) (err error) {
	defer s.db.unavailable(&err)
	if len(counts) == 0 {
		return nil
	}
	for _, c := range counts {
		if err := sqlrow.CheckClaimCode("refusal code", c.Code); err != nil {
			return fmt.Errorf("add claim refusals: %w", err)
		}
	}
	err = s.db.inTx(ctx, func(tx *sql.Tx) error {
		for _, c := range counts {
			if _, err := tx.ExecContext(ctx, `INSERT INTO claim_refusals (template_id, decided_by, code, n)
				SELECT id, 'cache', ?, ? FROM templates WHERE id = ?
				ON DUPLICATE KEY UPDATE n = n + VALUES(n)`, c.Code, c.N, c.TemplateID); err != nil {
				return fmt.Errorf("template %d: %w", c.TemplateID, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("add claim refusals: %w", err)
	}
	return nil
}
