package bench

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	for _, tc := range []struct {
		line string
		want time.Duration
		err  bool
	}{
		{"2236 (redis-server) S 1 2236 2236 0 -1 4194560 1034 0 0 0 1734 473 0 0 20 0 5 0 1296 1 2", 22070 * time.Millisecond, false},
		// A command name with spaces and parentheses of its own.
		{"77 (a) b (c) R 1 77 77 0 -1 0 0 0 0 0 250 50 0 0 20 0 1 0 9 1 1", 3 * time.Second, false},
		{"77 (short) R 1 2 3", 0, true},
		{"no parenthesis at all", 0, true},
		{"77 (x) R 1 77 77 0 -1 0 0 0 0 0 many 50 0", 0, true},
	} {
		got, err := parseProcStat(tc.line)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("parseProcStat(%q) = %s, %v; want %s, error %v", tc.line, got, err, tc.want, tc.err)
		}
	}
}

// TestSampleCPU: on Linux the sample holds this process, and what it used
// between two samples grows with the CPU it burns.
func TestSampleCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	// Burn at least 200 ms of this process's CPU, as the process's own
	// clock (not the wall's: a loaded machine gives the loop less) says.
	before := sampleCPU()
	var burnt time.Duration
	for start := time.Now(); burnt < 200*time.Millisecond && time.Since(start) < time.Minute; {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		burnt = time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) - cpuAt(before)
	}
	uses := sampleCPU().since(before)
	if len(uses) == 0 || uses[0].name != "quan" || uses[0].used < 150*time.Millisecond {
		t.Fatalf("uses %+v after burning %s of CPU; want quan first, with about that much", uses, burnt)
	}
}

func TestCPULine(t *testing.T) {
	got := cpuLine([]procUse{{"quan", 1300 * time.Millisecond}, {"redis-server", 200 * time.Millisecond}}, 10_000, time.Second, 2)
	want := "quan 1.30 s (130 µs a request), redis-server 0.20 s (20 µs a request); 1.50 s of the 2.00 s the 2 cores had (150 µs a request in all)"
	if got != want {
		t.Errorf("cpuLine:\n got %q\nwant %q", got, want)
	}
	if got := cpuLine(nil, 10, time.Second, 2); got != "" {
		t.Errorf("cpuLine of nothing = %q", got)
	}
}

// cpuAt is this process's CPU time in a sample.
func cpuAt(s cpuSample) time.Duration {
	for _, p := range s {
		if p.name == "quan" {
			return p.used
		}
	}
	return 0
}
