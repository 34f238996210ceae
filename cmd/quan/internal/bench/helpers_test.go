package bench

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// runBench runs `quan bench ARGS...` (args[0] is "bench") in-process and
// returns its stdout and stderr.
func runBench(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	if len(args) == 0 || args[0] != "bench" {
		t.Fatalf("runBench runs bench commands, not %q", args)
	}
	var stdout, stderr syncBuffer
	c := &Command{Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }}
	err := c.Run(context.Background(), args[1:])
	if testing.Verbose() {
		t.Logf("quan %s:\n%s%s", strings.Join(args, " "), stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String(), err
}

// buildQuan builds the quan binary, for the worker processes a bench
// starts.
func buildQuan(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "quan")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/quanhq/quan/cmd/quan").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
