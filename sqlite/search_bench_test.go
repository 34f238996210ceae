package sqlite

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// BenchmarkCouponSearch measures the latency of coupon searches over a
// store of QUAN_BENCH_COUPONS coupons (default 1,000,000): 10 templates,
// 10 coupons a user, one of each template, a seventh used. It reports the
// p50 and p99 of 1,000 searches of each kind, in ms:
//
//	QUAN_BENCH_COUPONS=10000000 go test ./sqlite -run '^$' -bench CouponSearch -benchtime 1x
func BenchmarkCouponSearch(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("QUAN_BENCH_COUPONS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	ctx := b.Context()
	db, err := Open(ctx, filepath.Join(b.TempDir(), "quan.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s := NewStore(db)
	at := time.Date(2030, 3, 14, 9, 0, 0, 0, time.UTC)
	var tpls []int64
	for i := range 10 {
		t := &quan.Template{ShopNo: 1, TemplateSpec: quan.TemplateSpec{
			Name: fmt.Sprintf("bench %d", i), Kind: quan.KindDirect, Rule: quan.Rule{Amount: 100},
			Source: quan.SourceShop, Scope: quan.Scope{Kind: quan.ScopeAll},
			IssueStart: at, IssueEnd: at.Add(24 * time.Hour),
			Validity:     quan.Validity{Kind: quan.ValidFixed, Start: at, End: at.Add(48 * time.Hour)},
			PerUserLimit: 1, CodePrefix: "B", Stacking: quan.StackAny,
		}, Stock: int64(n), TotalStock: int64(n), Status: quan.TemplateActive, CreatedAt: at, UpdatedAt: at}
		if err := s.CreateTemplate(ctx, t, "bench"); err != nil {
			b.Fatal(err)
		}
		tpls = append(tpls, t.ID)
	}
	start := time.Now()
	if _, err := db.write.ExecContext(ctx, `INSERT INTO coupons (template_id, shop_no, user_id, seq, status,
		valid_start, valid_end, source, task_id, created_at, updated_at)
		WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < ? - 1)
		SELECT ? + i % 10, 1, i / 10 + 1, 1, CASE WHEN i % 7 = 0 THEN 'used' ELSE 'available' END,
			?, ?, 'distribution', i % 10 + 1, ? + i, ? + i FROM k`,
		n, tpls[0], micros(at), micros(at.Add(48*time.Hour)), micros(at), micros(at)); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d coupons inserted in %v", n, time.Since(start).Round(time.Millisecond))
	if _, err := db.write.ExecContext(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
	users := int64(n / 10)
	codes := make([]string, 1000)
	for i := range codes {
		c, err := s.Coupon(ctx, 1, rand.Int64N(int64(n))+1)
		if err != nil {
			b.Fatal(err)
		}
		codes[i] = c.Code
	}
	kinds := []struct {
		name string
		f    func(i int) quan.CouponFilter
	}{
		{"user", func(int) quan.CouponFilter { return quan.CouponFilter{ShopNo: 1, UserID: rand.Int64N(users) + 1} }},
		{"code", func(i int) quan.CouponFilter {
			id, err := s.CodeKey().CouponID(codes[i], "B")
			if err != nil {
				b.Fatal(err)
			}
			return quan.CouponFilter{ShopNo: 1, ID: id}
		}},
		{"template-status-page", func(int) quan.CouponFilter {
			return quan.CouponFilter{ShopNo: 1, TemplateID: tpls[rand.IntN(10)], Status: quan.CouponUsed, Before: rand.Int64N(int64(n)) + 1, Limit: 50}
		}},
		{"template-page", func(int) quan.CouponFilter {
			return quan.CouponFilter{ShopNo: 1, TemplateID: tpls[rand.IntN(10)], Before: rand.Int64N(int64(n)) + 1, Limit: 50}
		}},
	}
	b.ResetTimer()
	for range b.N {
		for _, k := range kinds {
			d := make([]time.Duration, 1000)
			for i := range d {
				f := k.f(i)
				t0 := time.Now()
				cs, err := s.SearchCoupons(ctx, f)
				d[i] = time.Since(t0)
				if err != nil {
					b.Fatal(err)
				}
				if (k.name == "user" || k.name == "code") && len(cs) == 0 {
					b.Fatalf("%s: nothing found for %+v", k.name, f)
				}
			}
			slices.Sort(d)
			ms := func(x time.Duration) float64 { return float64(x) / float64(time.Millisecond) }
			b.ReportMetric(ms(d[499]), k.name+"-p50-ms")
			b.ReportMetric(ms(d[989]), k.name+"-p99-ms")
		}
	}
}
