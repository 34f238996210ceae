package bench

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/mysql/mysqltest"
)

// TestBenchWalletLock takes 300 orders through the wallet service and the
// raw loop on SQLite, and on MySQL when QUAN_TEST_MYSQL names a server, in
// a database of the test's own, and checks the figures are printed and the
// tool's own verification passed: every order ended with its coupon used
// by it.
func TestBenchWalletLock(t *testing.T) {
	t.Parallel()
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		testBenchWalletLock(t, "--data", t.TempDir())
	})
	t.Run("MySQL", func(t *testing.T) {
		t.Parallel()
		testBenchWalletLock(t, "--store", mysqltest.URL(t))
	})
}

func testBenchWalletLock(t *testing.T, args ...string) {
	t.Helper()
	args = append([]string{"bench", "wallet", "lock", "-n", "300", "-c", "8"}, args...)
	out, stderr, err := runBench(t, args...)
	if err != nil {
		t.Fatalf("bench wallet lock: %v\n%s%s", err, out, stderr)
	}
	for _, want := range []string{
		`no bus \(no events published\); 300 users each holding one available coupon of template \d+ for the service and 300 more for the raw loop`,
		`orders of 12,000 fen with 1,000 off, on 8 goroutines; \d+ cores`,
		`service \(WalletService.Lock \+ Redeem, in process\): 300 orders in \S+: [\d,]+ orders/s, per order p50 \S+ p99 \S+ \(\d+ cores\)`,
		`raw loop \(per order: BEGIN, UPDATE to locked, COMMIT; BEGIN, UPDATE to used, COMMIT; \d+ connections\): 300 orders in \S+: [\d,]+ orders/s, per order p50 \S+ p99 \S+ \(\d+ cores\)`,
		`service/raw [\d.]+× \([\d,]+ ÷ [\d,]+ orders/s; goal ≥ 5,000 orders/s and ≥ 0.70×\) \(\d+ cores\)`,
		`verified: service: 300 of 300 coupons used, each by its user's order \(300 of 300\); raw loop: 300 of 300 coupons used, each by its user's order \(300 of 300\)`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("no line matching %q in:\n%s", want, out)
		}
	}
}

// TestBenchWalletSweep expires 3,000 coupons without a bus and 3,000 with
// an embedded NATS bus, in batches of 250 by two sweepers at once (which
// on MySQL collide and fall back to picking FOR UPDATE SKIP LOCKED), on
// SQLite and on MySQL in a database made by --fresh-db, and checks the
// figures and the verification: every coupon expired, reported once.
func TestBenchWalletSweep(t *testing.T) {
	t.Parallel()
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		testBenchWalletSweep(t, "--data", t.TempDir())
	})
	t.Run("MySQL", func(t *testing.T) {
		t.Parallel()
		testBenchWalletSweep(t, "--store", mysqltest.URL(t), "--fresh-db")
	})
}

func testBenchWalletSweep(t *testing.T, args ...string) {
	t.Helper()
	args = append([]string{"bench", "wallet", "sweep", "-n", "3000", "--batch", "250", "--sweepers", "2"}, args...)
	out, stderr, err := runBench(t, args...)
	if err != nil {
		t.Fatalf("bench wallet sweep: %v\n%s%s", err, out, stderr)
	}
	for _, want := range []string{
		`3,000 available coupons of template \d+ whose window has closed, batch 250, 2 sweeping at once; \d+ cores`,
		// A coupon reported twice would make more than 3,000: the
		// database holds no other.
		`no bus \(no events published\): 3,000 coupons expired in \S+: [\d,]+ coupons/s \(seeded in \S+, not timed\) \(\d+ cores\)`,
		`embedded NATS bus \(every coupon's event, up to 1,000 a message\): 3,000 coupons expired in \S+: [\d,]+ coupons/s`,
		`verified: no bus \(no events published\): 3,000 of 3,000 coupons expired; embedded NATS bus \(every coupon's event, up to 1,000 a message\): 3,000 of 3,000 coupons expired`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("no line matching %q in:\n%s", want, out)
		}
	}
	if strings.Contains(args[len(args)-1], "fresh-db") && !regexp.MustCompile(`store mysql \(database quan_bench_\w+\)`).MatchString(out) {
		t.Errorf("no database of its own named in:\n%s", out)
	}
}

// TestBenchWalletAudit checks the verification fails the run for each way
// a coupon can end wrong.
func TestBenchWalletAudit(t *testing.T) {
	t.Parallel()
	orders := walletAudit{What: "service", Coupons: 10, Want: quan.CouponUsed,
		Counts: map[quan.CouponStatus]int64{quan.CouponUsed: 10}, Own: 10, OrderPrefix: "svc-", Reported: -1}
	sweep := walletAudit{What: "no bus", Coupons: 10, Want: quan.CouponExpired,
		Counts: map[quan.CouponStatus]int64{quan.CouponExpired: 10}, Reported: 10}
	tests := []struct {
		name  string
		audit walletAudit
		edit  func(*walletAudit)
		wants string
	}{
		{"OKOrders", orders, func(*walletAudit) {}, ""},
		{"OKSweep", sweep, func(*walletAudit) {}, ""},
		{"OKSweepOtherDueCoupons", sweep, func(a *walletAudit) { a.Reported = 12 }, ""},
		{"LeftLocked", orders, func(a *walletAudit) {
			a.Counts = map[quan.CouponStatus]int64{quan.CouponUsed: 9, quan.CouponLocked: 1}
			a.Own = 9
		}, "9 of 10 coupons used, 1 locked"},
		{"UsedByAnotherOrder", orders, func(a *walletAudit) { a.Own = 9 }, "9 of 10 coupons used by their user's order"},
		{"Missing", orders, func(a *walletAudit) { a.Counts = map[quan.CouponStatus]int64{quan.CouponUsed: 9}; a.Own = 9 }, "the rest missing"},
		{"LeftAvailable", sweep, func(a *walletAudit) {
			a.Counts = map[quan.CouponStatus]int64{quan.CouponExpired: 8, quan.CouponAvailable: 2}
		}, "8 of 10 coupons expired, 2 available"},
		{"ReportedFewer", sweep, func(a *walletAudit) { a.Reported = 9 }, "reported 9 coupons changed, fewer than the 10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.audit
			tt.edit(&a)
			err := a.check()
			switch {
			case tt.wants == "" && err != nil:
				t.Fatalf("check: %v", err)
			case tt.wants != "" && (err == nil || !strings.Contains(err.Error(), tt.wants)):
				t.Fatalf("check: %v, want an error saying %q", err, tt.wants)
			}
		})
	}
}

// TestBenchWalletFlags checks the refusals of bad flags.
func TestBenchWalletFlags(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args  []string
		wants string
	}{
		{[]string{"bench", "wallet"}, "say what to measure: lock, sweep or remind"},
		{[]string{"bench", "wallet", "settle"}, `unknown benchmark "settle"`},
		{[]string{"bench", "wallet", "lock", "-c", "0"}, "-c 0: want at least 1"},
		{[]string{"bench", "wallet", "sweep", "--sweepers", "0"}, "--sweepers 0: want at least 1"},
		{[]string{"bench", "wallet", "sweep", "--fresh-db"}, "--fresh-db makes a MySQL database"},
	} {
		t.Run(fmt.Sprint(tt.args[2:]), func(t *testing.T) {
			_, _, err := runBench(t, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.wants) {
				t.Fatalf("quan %s: %v, want an error saying %q", strings.Join(tt.args, " "), err, tt.wants)
			}
		})
	}
}
