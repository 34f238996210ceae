package bench

import (
	"regexp"
	"testing"

	"github.com/quanhq/quan/mysql/mysqltest"
)

// TestBenchShopper runs bench shopper small on SQLite, and on MySQL when
// QUAN_TEST_MYSQL names a server: the figures are printed and every
// answer was checked (a wallet item without its display, or a centre
// listing a template whose rule the user fails, fails the run).
func TestBenchShopper(t *testing.T) {
	t.Parallel()
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		testBenchShopper(t, "--data", t.TempDir())
	})
	t.Run("MySQL", func(t *testing.T) {
		t.Parallel()
		testBenchShopper(t, "--store", mysqltest.URL(t))
	})
}

func testBenchShopper(t *testing.T, args ...string) {
	t.Helper()
	args = append([]string{"bench", "shopper", "--templates", "60", "--coupons", "12", "--requests", "30", "-c", "2"}, args...)
	out, stderr, err := runBench(t, args...)
	if err != nil {
		t.Fatalf("bench shopper: %v\n%s%s", err, out, stderr)
	}
	for _, want := range []string{
		`bench shopper: store \w+, 60 active templates \(1 in 10 with an eligibility rule\), a wallet of 12 coupons; 30 requests a route on 2 connections; \d+ cores`,
		`bench shopper: GET /api/v1/me/coupons\?limit=100 \(wallet with display\): 30 requests in \S+: [\d,]+ req/s, latency p50 \S+ p99 \S+ max \S+ \(\d+ cores\)`,
		`bench shopper: GET /api/v1/me/claimable\?limit=20&cursor=RANDOM \(claim centre\): 30 requests in \S+: [\d,]+ req/s, latency p50 \S+ p99 \S+ max \S+ \(\d+ cores\)`,
		`bench shopper: verified: every wallet item carried its display`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("no line matching %q in:\n%s", want, out)
		}
	}
}

// TestBenchShopperRefusesFewTemplates: fewer templates than coupons is a
// usage error.
func TestBenchShopperRefusesFewTemplates(t *testing.T) {
	t.Parallel()
	if _, _, err := runBench(t, "bench", "shopper", "--templates", "5", "--coupons", "10", "--data", t.TempDir()); err == nil {
		t.Fatal("bench shopper --templates 5 --coupons 10 ran")
	}
}
