// Package mysqlbase holds Baseline, bare SQL on a quan database on MySQL,
// for the benchmarks of quan's binary: their setup and checks, and the
// raw loops they compare the store with. The store keeps its own SQL;
// this is the benchmarks'. Its sibling on SQLite is sqlitebase's
// Baseline; the binary picks one by the store's URL.
package mysqlbase

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/mysql"
)

// Baseline is bare SQL on a quan database on MySQL, outside the store:
// what benchmarks set up and check with, and the raw loops they compare
// the store with. The store keeps its own SQL; this is the benchmarks'.
type Baseline struct {
	db    *sql.DB
	conns int // connections Order runs on
}

// seedConns is how many connections Seed inserts on.
const seedConns = 2

// OpenBaseline connects to the database dsn names (as mysql.Open reads
// it, with the same session settings), which the store has migrated, on
// conns connections for Order (at least one).
func OpenBaseline(ctx context.Context, dsn string, conns int) (*Baseline, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("open the mysql baseline: %w", err)
	}
	connector, err := driver.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("open the mysql baseline: %w", err)
	}
	b := &Baseline{db: sql.OpenDB(connector), conns: max(conns, 1)}
	pool := max(b.conns, seedConns)
	b.db.SetMaxOpenConns(pool)
	b.db.SetMaxIdleConns(pool)
	if err := b.db.PingContext(ctx); err != nil {
		b.db.Close()
		return nil, fmt.Errorf("open the mysql baseline %s/%s: %w", cfg.Addr, cfg.DBName, err)
	}
	return b, nil
}

// Close closes the connections.
func (b *Baseline) Close() error { return b.db.Close() }

// OrderConns is how many connections Order runs on: those OpenBaseline
// was given.
func (b *Baseline) OrderConns() int { return b.conns }

// literal is t as a DATETIME(6) literal in UTC.
func literal(t time.Time) string {
	return t.UTC().Truncate(time.Microsecond).Format("'2006-01-02 15:04:05.000000'")
}

// Seed inserts one available coupon of tpl (receive sequence 1, source
// claim), created at created, for each of the users first…first+n-1, by
// multi-row INSERTs of rows coupons, each its own transaction, on two
// connections; the coupons of the k-th INSERT (from 0) are valid from
// start to end(k).
func (b *Baseline) Seed(ctx context.Context, tpl *quan.Template, first int64, n, rows int, start time.Time, end func(k int) time.Time, created time.Time) error {
	rows = max(rows, 1)
	stmts := make(chan string)
	errs := make(chan error, seedConns)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(stmts)
		var s strings.Builder
		for k := 0; k*rows < n; k++ {
			s.Reset()
			s.WriteString(`INSERT INTO coupons (template_id, shop_no, user_id, seq, status, valid_start, valid_end, source, created_at, updated_at) VALUES `)
			head := fmt.Sprintf("(%d, %d, ", tpl.ID, tpl.ShopNo)
			tail := fmt.Sprintf(", 1, 'available', %s, %s, 'claim', %s, %s)", literal(start), literal(end(k)), literal(created), literal(created))
			for i := k * rows; i < min(n, (k+1)*rows); i++ {
				if i > k*rows {
					s.WriteString(", ")
				}
				s.WriteString(head)
				s.WriteString(strconv.FormatInt(first+int64(i), 10))
				s.WriteString(tail)
			}
			select {
			case stmts <- s.String():
			case <-ctx.Done():
				return
			}
		}
	})
	for range seedConns {
		wg.Go(func() {
			for stmt := range stmts {
				if _, err := b.db.ExecContext(ctx, stmt); err != nil {
					errs <- err
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return fmt.Errorf("seed %d coupons: %w", n, err)
	}
	return ctx.Err()
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
// (saveCoupon in mysql/wallet.go).
const saveSQL = `UPDATE coupons SET status = ?, order_id = ?, locked_until = ?, lock_key = ?, updated_at = ? WHERE id = ?`

// Order is one order of a raw loop: coupon id locked for order until ttl
// from now in a bare transaction, then used by it in another, each by the
// statement the store saves a coupon with. It fails unless each changes
// the coupon.
func (b *Baseline) Order(ctx context.Context, id int64, order string, ttl time.Duration) error {
	now := time.Now().UTC().Truncate(time.Microsecond)
	until := now.Add(ttl)
	for _, status := range []quan.CouponStatus{quan.CouponLocked, quan.CouponUsed} {
		tx, err := b.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, saveSQL, string(status), order, until, order, now, id)
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
	counts, err := countStatuses(ctx, b.db, template, first, last)
	if err != nil || prefix == "" {
		return counts, 0, err
	}
	var own int64
	err = b.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM coupons WHERE template_id = ? AND user_id >= ? AND user_id < ? AND status = 'used' AND order_id = CONCAT(?, user_id)`,
		template, first, last, prefix).Scan(&own)
	if err != nil {
		return nil, 0, fmt.Errorf("audit coupons: %w", err)
	}
	return counts, own, nil
}

func countStatuses(ctx context.Context, db *sql.DB, template, first, last int64) (map[quan.CouponStatus]int64, error) {
	rows, err := db.QueryContext(ctx, `SELECT status, COUNT(*) FROM coupons WHERE template_id = ? AND user_id >= ? AND user_id < ? GROUP BY status`,
		template, first, last)
	if err != nil {
		return nil, fmt.Errorf("audit coupons: %w", err)
	}
	defer rows.Close()
	counts := map[quan.CouponStatus]int64{}
	for rows.Next() {
		var (
			s     string
			count int64
		)
		if err := rows.Scan(&s, &count); err != nil {
			return nil, fmt.Errorf("audit coupons: %w", err)
		}
		counts[quan.CouponStatus(s)] = count
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit coupons: %w", err)
	}
	return counts, nil
}

// CountSeeded adds n coupons of tpl, seeded by Seed with created as their
// creation time, to the template's statistics, as the store counts the
// coupons it issues by claim (see mysql/stats.go), in slot 0.
func (b *Baseline) CountSeeded(ctx context.Context, tpl *quan.Template, n int64, created time.Time) error {
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("count %d seeded coupons: %w", n, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO template_stats (template_id, slot, shop_no, issued_claim, available) VALUES (?, 0, ?, ?, ?)
		ON DUPLICATE KEY UPDATE issued_claim = issued_claim + VALUES(issued_claim), available = available + VALUES(available)`,
		tpl.ID, tpl.ShopNo, n, n); err != nil {
		return fmt.Errorf("count %d seeded coupons: %w", n, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO template_stats_hourly (template_id, hour, slot, shop_no, issued, claimed) VALUES (?, ?, 0, ?, ?, ?)
		ON DUPLICATE KEY UPDATE issued = issued + VALUES(issued), claimed = claimed + VALUES(claimed)`,
		tpl.ID, created.UTC().Truncate(time.Hour), tpl.ShopNo, n, n); err != nil {
		return fmt.Errorf("count %d seeded coupons: %w", n, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("count %d seeded coupons: %w", n, err)
	}
	return nil
}
