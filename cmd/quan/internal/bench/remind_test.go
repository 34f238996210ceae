package bench

import (
	"regexp"
	"testing"

	"github.com/quanhq/quan/mysql/mysqltest"
)

// TestBenchWalletRemind reminds 3,000 coupons ending within the day, in
// batches of 250 by two sweepers at once, on SQLite and on MySQL when
// QUAN_TEST_MYSQL names a server, and checks the figures are printed and
// the tool's own verification passed: every coupon reminded once.
func TestBenchWalletRemind(t *testing.T) {
	t.Parallel()
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		testBenchWalletRemind(t, "--data", t.TempDir())
	})
	t.Run("MySQL", func(t *testing.T) {
		t.Parallel()
		testBenchWalletRemind(t, "--store", mysqltest.URL(t))
	})
}

func testBenchWalletRemind(t *testing.T, args ...string) {
	t.Helper()
	args = append([]string{"bench", "wallet", "remind", "-n", "3000", "--batch", "250", "--sweepers", "2", "--channels", "inbox,sms"}, args...)
	out, stderr, err := runBench(t, args...)
	if err != nil {
		t.Fatalf("bench wallet remind: %v\n%s%s", err, out, stderr)
	}
	for _, want := range []string{
		`3,000 available coupons of template \d+ ending within the next day, remindBefore 24h on inbox,sms, batch 250, 2 sweeping at once`,
		`3,000 coupons reminded \(6,000 notifications recorded\) in \S+: [\d,]+ coupons/s \(\d+ cores\)`,
		`verified: 3,000 coupons each reminded once, none left due`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("no line matching %q in:\n%s", want, out)
		}
	}
}
