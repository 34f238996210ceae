package bench

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
)

const benchChildEnv = "QUAN_SHEET_BENCH_CHILD"

// TestReadChildProcess is the child side of TestBenchRead: it runs only when
// re-executed with benchChildEnv set.
func TestReadChildProcess(t *testing.T) {
	args := os.Getenv(benchChildEnv)
	if args == "" {
		t.Skip("run by TestBenchRead")
	}
	if err := readChild(context.Background(), os.Stdout, strings.Split(args, "\x1f")); err != nil {
		t.Fatal(err)
	}
}

func TestBenchRead(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	err := benchRead(context.Background(), &out, readOptions{
		Rows: 3000,
		Dir:  t.TempDir(),
		Command: func(ctx context.Context, args []string) *exec.Cmd {
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestReadChildProcess$")
			cmd.Env = append(os.Environ(), benchChildEnv+"="+strings.Join(args, "\x1f"))
			return cmd
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	for _, want := range []string{"inline", "shared", "quan", "excelize", "rows/s", "peak RSS"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	measured := 0
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) > 3 && f[3] == "3000" {
			measured++
		}
	}
	if measured != 4 {
		t.Errorf("every measurement should count 3000 rows:\n%s", out.String())
	}
}
