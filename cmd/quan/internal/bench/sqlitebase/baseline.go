// Package sqlitebase holds Baseline, bare SQL on a quan database on
// SQLite, for the benchmarks of quan's binary: their setup and checks,
// and the raw loops they compare the store with. The store keeps its own
// SQL; this is the benchmarks'. Its sibling on MySQL is mysqlbase's
// Baseline; the binary picks one by the store's URL.
package sqlitebase

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver, as the store's

	"github.com/quanhq/quan"
)

// Baseline is bare SQL on a quan database on SQLite, outside the store,
// on one connection: SQLite has one writer.
type Baseline struct {
	db   *sql.DB
	path string // the database file
}

// OpenBaseline opens the database file at path, which the store has
// created and migrated, with the store's writer settings: WAL (the file
// has it already), NORMAL sync, transactions that begin IMMEDIATE, and
// waiting up to 10 s for another writer, such as the store's.
func OpenBaseline(ctx context.Context, path string) (*Baseline, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open the sqlite baseline: %w", err)
	}
	db, err := sql.Open("sqlite", fileDSN(abs, url.Values{
		"_pragma": {"busy_timeout(10000)", "synchronous(NORMAL)"},
		"_txlock": {"immediate"},
	}))
	if err != nil {
		return nil, fmt.Errorf("open the sqlite baseline %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open the sqlite baseline %s: %w", path, err)
	}
	return &Baseline{db: db, path: abs}, nil
}

// fileDSN is the file: URI of the absolute path abs with query q.
func fileDSN(abs string, q url.Values) string {
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive: file:///C:/...
	}
	return (&url.URL{Scheme: "file", Path: p, RawQuery: q.Encode()}).String()
}

// Close closes the connection.
func (b *Baseline) Close() error { return b.db.Close() }

// OrderConns is how many connections Order runs on: one.
func (b *Baseline) OrderConns() int { return 1 }

// micros is t as the store keeps it: Unix microseconds.
func micros(t time.Time) int64 { return t.UTC().Truncate(time.Microsecond).UnixMicro() }

// Seed inserts one available coupon of tpl (receive sequence 1, source
// claim), created at created, for each of the users first…first+n-1, by
// multi-row INSERTs of rows coupons in one transaction; the coupons of the
// k-th INSERT (from 0) are valid from start to end(k).
func (b *Baseline) Seed(ctx context.Context, tpl *quan.Template, first int64, n, rows int, start time.Time, end func(k int) time.Time, created time.Time) error {
	rows = max(rows, 1)
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("seed %d coupons: %w", n, err)
	}
	defer tx.Rollback()
	var s strings.Builder
	for k := 0; k*rows < n; k++ {
		s.Reset()
		s.WriteString(`INSERT INTO coupons (template_id, shop_no, user_id, seq, status, valid_start, valid_end, source, created_at, updated_at) VALUES `)
		head := fmt.Sprintf("(%d, %d, ", tpl.ID, tpl.ShopNo)
		tail := fmt.Sprintf(", 1, 'available', %d, %d, 'claim', %d, %d)", micros(start), micros(end(k)), micros(created), micros(created))
		for i := k * rows; i < min(n, (k+1)*rows); i++ {
			if i > k*rows {
				s.WriteString(", ")
			}
			s.WriteString(head)
			s.WriteString(strconv.FormatInt(first+int64(i), 10))
			s.WriteString(tail)
		}
		if _, err := tx.ExecContext(ctx, s.String()); err != nil {
			return fmt.Errorf("seed %d coupons: %w", n, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("seed %d coupons: %w", n, err)
	}
	return nil
}

// CouponIDs returns the ids of the coupons of template held by the users
// first…first+n-1, by user. It fails if one of them holds none.
func (b *Baseline) CouponIDs(ctx context.Context, template, first int64, n int) ([]int64, error) {
	rows, err := b.db.QueryContext(ctx, `SELECT user_id, id FROM coupons WHERE template_id = ? AND user_id >= ? AND user_id < ?`,
		template, first, first+int64(n))
	if err != nil {
		return nil, fmt.Errorf("coupon ids: %w", err)
	}
	defer rows.Close()
	ids := make([]int64, n)
	for rows.Next() {
		var user, id int64
		if err := rows.Scan(&user, &id); err != nil {
			return nil, fmt.Errorf("coupon ids: %w", err)
		}
		ids[user-first] = id
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("coupon ids: %w", err)
	}
	if i := slices.Index(ids, 0); i >= 0 {
		return nil, fmt.Errorf("coupon ids: user %d holds no coupon of template %d", first+int64(i), template)
	}
	return ids, nil
}

// saveSQL is the statement the store saves a changed coupon with; the raw
// loop writes the order id where the store writes the lock request's key
// (saveCoupon in sqlite/wallet.go).
const saveSQL = `UPDATE coupons SET status = ?, order_id = ?, locked_until = ?, lock_key = ?, updated_at = ? WHERE id = ?`

// Order is one order of a raw loop: coupon id locked for order until ttl
// from now in a bare transaction, then used by it in another, each by the
// statement the store saves a coupon with. It fails unless each changes
// the coupon.
func (b *Baseline) Order(ctx context.Context, id int64, order string, ttl time.Duration) error {
	now := time.Now()
	until := now.Add(ttl)
	for _, status := range []quan.CouponStatus{quan.CouponLocked, quan.CouponUsed} {
		tx, err := b.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, saveSQL, string(status), order, micros(until), order, micros(now), id)
		if err == nil {
			var n int64
			if n, err = res.RowsAffected(); err == nil && n != 1 {
				err = fmt.Errorf("coupon %d: %d rows changed", id, n)
			}
		}
		if err != nil {
			tx.Rollback()
			return fmt.Errorf("%s coupon %d: %w", status, id, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("%s coupon %d: commit: %w", status, id, err)
		}
	}
	return nil
}

// Audit counts the coupons of template held by the users first…first+n-1
// by status and, with an order prefix, returns how many are used by the
// order prefix+user.
func (b *Baseline) Audit(ctx context.Context, template, first int64, n int, prefix string) (map[quan.CouponStatus]int64, int64, error) {
	last := first + int64(n)
	rows, err := b.db.QueryContext(ctx, `SELECT status, COUNT(*) FROM coupons WHERE template_id = ? AND user_id >= ? AND user_id < ? GROUP BY status`,
		template, first, last)
	if err != nil {
		return nil, 0, fmt.Errorf("audit coupons: %w", err)
	}
	defer rows.Close()
	counts := map[quan.CouponStatus]int64{}
	for rows.Next() {
		var (
			s     string
			count int64
		)
		if err := rows.Scan(&s, &count); err != nil {
			return nil, 0, fmt.Errorf("audit coupons: %w", err)
		}
		counts[quan.CouponStatus(s)] = count
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("audit coupons: %w", err)
	}
	if prefix == "" {
		return counts, 0, nil
	}
	var own int64
	err = b.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM coupons WHERE template_id = ? AND user_id >= ? AND user_id < ? AND status = 'used' AND order_id = ? || user_id`,
		template, first, last, prefix).Scan(&own)
	if err != nil {
		return nil, 0, fmt.Errorf("audit coupons: %w", err)
	}
	return counts, own, nil
}

// CountSeeded adds n coupons of tpl, seeded by Seed with created as their
// creation time, to the template's statistics, as the store counts the
// coupons it issues by claim (see sqlite/stats.go): one upsert of the
// template's counters and one of its hour's.
func (b *Baseline) CountSeeded(ctx context.Context, tpl *quan.Template, n int64, created time.Time) error {
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("count %d seeded coupons: %w", n, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO template_stats (template_id, shop_no, issued_claim, available) VALUES (?, ?, ?, ?)
		ON CONFLICT (template_id) DO UPDATE SET issued_claim = issued_claim + excluded.issued_claim, available = available + excluded.available`,
		tpl.ID, tpl.ShopNo, n, n); err != nil {
		return fmt.Errorf("count %d seeded coupons: %w", n, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO template_stats_hourly (template_id, hour, shop_no, issued, claimed) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (template_id, hour) DO UPDATE SET issued = issued + excluded.issued, claimed = claimed + excluded.claimed`,
		tpl.ID, micros(created.Truncate(time.Hour)), tpl.ShopNo, n, n); err != nil {
		return fmt.Errorf("count %d seeded coupons: %w", n, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("count %d seeded coupons: %w", n, err)
	}
	return nil
}
