package integration_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/quanhq/quan/internal/integration"
)

func TestMain(m *testing.M) { integration.Main(m) }

// childEnv marks the test binary run by TestMainSaysWhatSkipped.
const childEnv = "QUAN_INTEGRATION_CHILD"

// TestNeedsRedis is a test of a Redis suite, for
// TestMainSaysWhatSkipped to run.
func TestNeedsRedis(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("run by TestMainSaysWhatSkipped")
	}
	integration.Need(t, integration.Redis)
}

// TestNeedsNothing is a test that needs no service, for
// TestMainSaysWhatSkipped to run.
func TestNeedsNothing(t *testing.T) {}

// TestMainSaysWhatSkipped runs this package's tests as go test -v runs
// them, without QUAN_TEST_REDIS: a test that needs Redis skips, saying
// what to set, and the package's run ends with one line naming the suite
// skipped and the variable that runs it; a run with nothing skipped ends
// without it.
func TestMainSaysWhatSkipped(t *testing.T) {
	run := func(pattern string) string {
		cmd := exec.Command(os.Args[0], "-test.v", "-test.run", pattern)
		cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, integration.Redis+"=") }), childEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, out)
		}
		return string(out)
	}
	out := run("^TestNeeds")
	line := "./internal/integration: 1 integration test skipped (Redis 1): set QUAN_TEST_REDIS=redis://127.0.0.1:6379 to run them\n"
	if !strings.Contains(out, "--- SKIP: TestNeedsRedis") || !strings.Contains(out, "set QUAN_TEST_REDIS=redis://127.0.0.1:6379 to run it") ||
		strings.Count(out, line) != 1 {
		t.Errorf("go test -v without QUAN_TEST_REDIS printed:\n%s\nwant the skip and once the line %q", out, line)
	}
	if out := run("^TestNeedsNothing$"); strings.Contains(out, "skipped") {
		t.Errorf("nothing skipped, yet:\n%s", out)
	}
}

func TestSummary(t *testing.T) {
	for _, tc := range []struct {
		skipped map[string][]string
		want    string
	}{
		{nil, ""},
		{map[string][]string{integration.Redis: {}}, ""},
		{map[string][]string{integration.NATS: {"TestA", "TestB"}, integration.MySQL: {"TestA", "TestC"}},
			"./mysql: 3 integration tests skipped (MySQL 2, NATS 2): set QUAN_TEST_MYSQL='root@tcp(127.0.0.1:3306)/test' " +
				"QUAN_TEST_NATS=nats://127.0.0.1:4222 to run them"},
	} {
		if got := integration.Summary("./mysql", tc.skipped); got != tc.want {
			t.Errorf("Summary(%v) = %q, want %q", tc.skipped, got, tc.want)
		}
	}
}
