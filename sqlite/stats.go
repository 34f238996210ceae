package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/sqlrow"
)

var _ quan.StatsStore = (*Store)(nil)

// The upserts of a quan.StatsDelta: one row per template, per template and
// hour, per template and failure reason. They are prepared when the store
// opens, as every write transaction that changes coupons runs them.
var (
	addTemplateStatsSQL = `INSERT INTO template_stats (template_id, shop_no, ` + strings.Join(sqlrow.StatsCounters, ", ") + `)
		VALUES (?, ?, ` + sqlrow.Params(len(sqlrow.StatsCounters)) + `)
		ON CONFLICT (template_id) DO UPDATE SET ` + addExcluded(sqlrow.StatsCounters)
	addHourStatsSQL = `INSERT INTO template_stats_hourly (template_id, hour, shop_no, issued, used, claimed) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (template_id, hour) DO UPDATE SET issued = issued + excluded.issued, used = used + excluded.used,
			claimed = claimed + excluded.claimed`
	addFailedSQL = `INSERT INTO claim_refusals (template_id, decided_by, code, n) VALUES (?, 'store', ?, ?)
		ON CONFLICT (template_id, decided_by, code) DO UPDATE SET n = n + excluded.n`
)

// addExcluded is "c = c + excluded.c" for each column.
func addExcluded(cols []string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = c + " = " + c + " + excluded." + c
	}
	return strings.Join(parts, ", ")
}

// addStats writes d in tx, the transaction of the changes it counts.
func (s *Store) addStats(ctx context.Context, tx *sql.Tx, d *quan.StatsDelta) error {
	for _, t := range d.Templates() {
		args := append([]any{t.TemplateID, t.ShopNo}, sqlrow.TemplateDeltaArgs(t)...)
		if _, err := s.db.writeStmts.exec(ctx, tx, addTemplateStatsSQL, args...); err != nil {
			return fmt.Errorf("count the statistics of template %d: %w", t.TemplateID, err)
		}
	}
	for _, h := range d.Hours() {
		if _, err := s.db.writeStmts.exec(ctx, tx, addHourStatsSQL, h.TemplateID, micros(h.Hour), h.ShopNo, h.Issued, h.Used, h.Claimed); err != nil {
			return fmt.Errorf("count the hourly statistics of template %d: %w", h.TemplateID, err)
		}
	}
	for _, f := range d.Failures() {
		if _, err := s.db.writeStmts.exec(ctx, tx, addFailedSQL, f.TemplateID, f.Reason, f.N); err != nil {
			return fmt.Errorf("count the failed claims of template %d: %w", f.TemplateID, err)
		}
	}
	return nil
}

// statsSums selects the counters of template_stats summed.
var statsSums = func() string {
	parts := make([]string, len(sqlrow.StatsCounters))
	for i, c := range sqlrow.StatsCounters {
		parts[i] = "coalesce(sum(" + c + "), 0)"
	}
	return strings.Join(parts, ", ")
}()

// TemplateStats implements quan.StatsStore: the template's row of
// template_stats (none before its first coupon), its rows of
// template_stats_hourly in the range and of claim_refusals, all by primary
// key, in one read transaction.
func (s *Store) TemplateStats(ctx context.Context, shop, id int64, r quan.StatsRange) (_ *quan.TemplateStats, err error) {
	defer s.db.unavailable(&err)
	tx, err := s.db.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
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
	err = tx.QueryRowContext(ctx, query+` GROUP BY t.id`, args...).Scan(append([]any{&st.ShopNo}, sqlrow.StatsDests(&st.StatsCounts)...)...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, quan.Errorf(quan.ENOTFOUND, "template %d not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("statistics of template %d: %w", id, err)
	}
	first, end := r.Hours()
	if st.Hourly, err = sqlrow.Query(ctx, tx, fmt.Sprintf("hourly statistics of template %d", id), sqlrow.ScanHour,
		`SELECT hour, issued, used FROM template_stats_hourly WHERE template_id = ? AND hour >= ? AND hour < ? ORDER BY hour`,
		id, micros(first), micros(end)); err != nil {
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
	tx, err := s.db.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("statistics of shop %d: %w", shop, err)
	}
	defer tx.Rollback()
	where, args := "", []any{}
	if shop != quan.AnyShop {
		where, args = " WHERE shop_no = ?", []any{shop}
	}
	st := &quan.ShopStats{ShopNo: shop}
	if err := tx.QueryRowContext(ctx, `SELECT count(*), `+statsSums+` FROM template_stats`+where, args...).
		Scan(append([]any{&st.Templates}, sqlrow.StatsDests(&st.StatsCounts)...)...); err != nil {
		return nil, fmt.Errorf("statistics of shop %d: %w", shop, err)
	}
	first, end := r.Hours()
	hourly := `SELECT hour, sum(issued), sum(used) FROM template_stats_hourly WHERE hour >= ? AND hour < ?`
	hargs := []any{micros(first), micros(end)}
	if shop != quan.AnyShop {
		hourly += ` AND shop_no = ?`
		hargs = append(hargs, shop)
	}
	if st.Hourly, err = sqlrow.Query(ctx, tx, fmt.Sprintf("hourly statistics of shop %d", shop), sqlrow.ScanHour,
		hourly+` GROUP BY hour ORDER BY hour`, hargs...); err != nil {
		return nil, err
	}
	tallies := `SELECT decided_by, code, sum(n) FROM claim_refusals GROUP BY decided_by, code`
	if shop != quan.AnyShop {
		tallies = `SELECT r.decided_by, r.code, sum(r.n) FROM templates t JOIN claim_refusals r ON r.template_id = t.id
			WHERE t.shop_no = ? GROUP BY r.decided_by, r.code`
	}
	if err := sqlrow.Tallies(ctx, tx, &st.StatsCounts, tallies, args...); err != nil {
		return nil, fmt.Errorf("statistics of shop %d: %w", shop, err)
	}
	return st, nil
}

// AddRefusals implements quan.StatsStore in one write transaction.
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
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("add claim refusals: %w", err)
	}
	defer tx.Rollback()
	for _, c := range counts {
		if _, err := tx.ExecContext(ctx, `INSERT INTO claim_refusals (template_id, decided_by, code, n)
			SELECT id, 'cache', ?, ? FROM templates WHERE id = ?
			ON CONFLICT (template_id, decided_by, code) DO UPDATE SET n = n + excluded.n`, c.Code, c.N, c.TemplateID); err != nil {
			return fmt.Errorf("add claim refusals of template %d: %w", c.TemplateID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("add claim refusals: commit: %w", translate(err))
	}
	return nil
}
