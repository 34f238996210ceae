package bench

import (
	"regexp"
	"testing"

	"github.com/quanhq/quan/mysql/mysqltest"
)

// TestBenchNotify sends 3,000 SMS and 300 emails through the dispatcher
// on SQLite, and on MySQL when QUAN_TEST_MYSQL names a server, and checks
// the figures are printed and every message was verified delivered once.
func TestBenchNotify(t *testing.T) {
	t.Parallel()
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		testBenchNotify(t, "--data", t.TempDir())
	})
	t.Run("MySQL", func(t *testing.T) {
		t.Parallel()
		testBenchNotify(t, "--store", mysqltest.URL(t), "--concurrency", "2")
	})
}

func testBenchNotify(t *testing.T, args ...string) {
	t.Helper()
	args = append([]string{"bench", "notify", "--sms", "3000", "--email", "300", "--batch", "200"}, args...)
	out, stderr, err := runBench(t, args...)
	if err != nil {
		t.Fatalf("bench notify: %v\n%s%s", err, out, stderr)
	}
	for _, want := range []string{
		`bench notify: store \w+, 3,000 SMS and 300 emails, batch 200, \d in flight a channel, rates SMS none, email none; \d+ cores`,
		`bench notify: 3,000 SMS in \S+: [\d,]+ SMS/s`,
		`bench notify: verified: SMS: every one of 3,000 delivered once \(3,000 distinct ids, no duplicate\), none lost, all sent in the store`,
		`bench notify: 300 emails in \S+: [\d,]+ emails/s`,
		`bench notify: verified: emails: every one of 300 delivered once \(300 distinct ids, no duplicate\), none lost, all sent in the store`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("no line matching %q in:\n%s", want, out)
		}
	}
}

// TestBenchNotifyRefusesNothing: no message to send is a usage error.
func TestBenchNotifyRefusesNothing(t *testing.T) {
	t.Parallel()
	if _, _, err := runBench(t, "bench", "notify", "--sms", "0", "--email", "0", "--data", t.TempDir()); err == nil {
		t.Fatal("bench notify --sms 0 --email 0 ran")
	}
}
