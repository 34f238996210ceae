package bench

import (
	"regexp"
	"testing"
)

// TestBenchConns runs `quan bench conns` against a quan serve process:
// trickling connections above the minimum rate are all held, stalled
// ones are all cut off within the hold (a short body window), and the
// figures are printed.
func TestBenchConns(t *testing.T) {
	bin := buildQuan(t)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--kind", "trickle", "--rate", "1100"}, []string{
			`quan bench conns: 20 connections trickling 1100 bytes a second into POST /api/v1/templates, held 2s; quan serve with its defaults; \d+ cores`,
			`server before: RSS \S+ MiB, Go heap in use \S+ MiB, stacks \S+ MiB, \d+ goroutines`,
			`per connection held \(20\): RSS -?[\d.]+ KiB, heap -?[\d.]+ KiB, stacks -?[\d.]+ KiB, heap\+stacks -?[\d.]+ KiB, -?[\d.]+ goroutines`,
			`open at the end: 20 of 20; closed by the server: 0\n`,
			`normal client meanwhile: \d+ GET /healthz answered 200, 0 failed`,
		}},
		{[]string{"--kind", "stall", "--serve-args", "--body-window 200ms"}, []string{
			`per connection held: none held`,
			`open at the end: 0 of 20; closed by the server: 20, `,
			`normal client meanwhile: \d+ GET /healthz answered 200, 0 failed`,
		}},
		{[]string{"--kind", "idle", "--serve-args", "--idle-timeout 200ms"}, []string{
			`open at the end: 0 of 20; closed by the server: 20, `,
		}},
	} {
		args := append([]string{"bench", "conns", "-n", "20", "--hold", "2s", "--quan-bin", bin}, tc.args...)
		out, stderr, err := runBench(t, args...)
		if err != nil {
			t.Fatalf("%v\n%s%s", err, out, stderr)
		}
		for _, re := range tc.want {
			if !regexp.MustCompile(re).MatchString(out) {
				t.Errorf("%v: output lacks %s:\n%s", tc.args, re, out)
			}
		}
	}
}
