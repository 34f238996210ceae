package bench

import (
	"regexp"
	"strings"
	"testing"
)

// TestBenchDistributeNotify runs the distribution without and with
// notifications in one run and prints both, what the second recorded
// and their ratio.
func TestBenchDistributeNotify(t *testing.T) {
	out, stderr, err := runBench(t, "bench", "distribute", "-n", "300", "--chunk-size", "100", "--data", t.TempDir(), "--notify", "inbox,sms")
	if err != nil {
		t.Fatalf("%v\n%s%s", err, out, stderr)
	}
	for _, re := range []string{
		`bench distribute: store sqlite, .*; the same file of 300 users \(phone and mail columns\) without and then with notify=inbox,sms, each on a store of its own`,
		`bench distribute: without notify: 300 users, 300 issued, wall \S+, [\d,]+ rows/s\n`,
		`bench distribute: notify=inbox,sms: 300 users, 300 issued, wall \S+, [\d,]+ rows/s; notifications recorded: inbox sent 1, sms queued 300\n`,
		`bench distribute: notify=inbox,sms / without: [\d.]+× \(\S+ / \S+\), peak RSS \d+ MB \(both runs\), chunk 100, \d+ cores`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("no line matching %s in:\n%s", re, out)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--notify", "fax"}, "not a notification type"},
		{[]string{"--notify", "sms", "--store", "sqlite:" + t.TempDir() + "/x.db"}, "leave --store at sqlite:"},
	} {
		args := append([]string{"bench", "distribute", "-n", "10", "--data", t.TempDir()}, tc.args...)
		if _, _, err := runBench(t, args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
}

// TestBenchDistributeSegment distributes the users a segment matches as a
// file of them and as the segment, and prints both and their ratio.
func TestBenchDistributeSegment(t *testing.T) {
	out, stderr, err := runBench(t, "bench", "distribute", "-n", "400", "--chunk-size", "100", "--data", t.TempDir(), "--segment", "user.level >= 2")
	if err != nil {
		t.Fatalf("%v\n%s%s", err, out, stderr)
	}
	for _, re := range []string{
		`bench distribute: store sqlite, .*; 400 users with facts \(level 0-3 at random, half tagged vip\), (\d+) of them matching user.level >= 2, distributed as a file of them`,
		`bench distribute: file: (\d+) users, (\d+) issued, wall \S+, [\d,]+ rows/s\n`,
		`bench distribute: segment: (\d+) users, (\d+) issued, wall \S+, [\d,]+ rows/s, of which the segment read and frozen \S+\n`,
		`bench distribute: segment / file: [\d.]+× \(\S+ / \S+\), peak RSS \d+ MB \(both runs\), chunk 100, \d+ cores`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("no line matching %s in:\n%s", re, out)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--segment", "user.levl > 1"}, "undefined field 'levl'"},
		{[]string{"--segment", "user.level > 5"}, "matches none of the 10 users"},
		{[]string{"--segment", "user.level > 1", "--notify", "sms"}, "give one"},
		{[]string{"--segment", "user.level > 1", "--store", "sqlite:" + t.TempDir() + "/x.db"}, "leave --store at sqlite:"},
	} {
		args := append([]string{"bench", "distribute", "-n", "10", "--data", t.TempDir()}, tc.args...)
		if _, _, err := runBench(t, args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
}
