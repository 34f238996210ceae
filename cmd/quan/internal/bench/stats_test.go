package bench

import (
	"regexp"
	"testing"

	"github.com/quanhq/quan/mysql/mysqltest"
)

// TestBenchStats asks a template of 1,200 coupons for its statistics 200
// times on SQLite, and on MySQL when QUAN_TEST_MYSQL names a server, and checks
// the figures are printed and every answer counted every coupon.
func TestBenchStats(t *testing.T) {
	t.Parallel()
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		testBenchStats(t, "--data", t.TempDir())
	})
	t.Run("MySQL", func(t *testing.T) {
		t.Parallel()
		testBenchStats(t, "--store", mysqltest.URL(t))
	})
}

func testBenchStats(t *testing.T, args ...string) {
	t.Helper()
	args = append([]string{"bench", "stats", "--coupons", "1200", "--requests", "200", "-c", "2"}, args...)
	out, stderr, err := runBench(t, args...)
	if err != nil {
		t.Fatalf("bench stats: %v\n%s%s", err, out, stderr)
	}
	for _, want := range []string{
		`bench stats: store \w+, template \d+ with 1,200 coupons, 200 requests on 2 connections; \d+ cores`,
		`bench stats: seeded 1,200 coupons in \S+ \(not timed\)`,
		`bench stats: GET /api/v1/templates/\{id\}/stats: 200 requests in \S+: [\d,]+ req/s, latency p50 \S+ p99 \S+ max \S+ \(\d+ cores\)`,
		`bench stats: verified: every answer counted 1,200 coupons issued, all available`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("no line matching %q in:\n%s", want, out)
		}
	}
}

// TestBenchStatsRefusesNoCoupons: --coupons below 1 is a usage error.
func TestBenchStatsRefusesNoCoupons(t *testing.T) {
	t.Parallel()
	if _, _, err := runBench(t, "bench", "stats", "--coupons", "0", "--data", t.TempDir()); err == nil {
		t.Fatal("bench stats --coupons 0 ran")
	}
}
