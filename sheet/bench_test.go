package sheet

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const benchChildEnv = "QUAN_SHEET_BENCH_CHILD"

// TestBenchChildProcess is the child side of TestBench: it runs only when
// re-executed with benchChildEnv set.
func TestBenchChildProcess(t *testing.T) {
	args := os.Getenv(benchChildEnv)
	if args == "" {
		t.Skip("run by TestBench")
	}
	if err := BenchChild(context.Background(), os.Stdout, strings.Split(args, "\x1f")); err != nil {
		t.Fatal(err)
	}
}

func TestBench(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	err := Bench(context.Background(), &out, BenchOptions{
		Rows: 3000,
		Dir:  t.TempDir(),
		Command: func(ctx context.Context, args []string) *exec.Cmd {
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestBenchChildProcess$")
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

var benchFiles struct {
	once sync.Once
	dir  string
	err  error
}

// benchFile returns a generated million-row file of the given format,
// made once per test binary run.
func benchFile(b *testing.B, format GenFormat) string {
	benchFiles.once.Do(func() {
		benchFiles.dir, benchFiles.err = os.MkdirTemp("", "quan-sheet-bench-")
		for _, f := range []GenFormat{GenXLSXInline, GenXLSXShared} {
			if benchFiles.err == nil {
				_, benchFiles.err = GenerateFile(filepath.Join(benchFiles.dir, string(rune('a'+f))+".xlsx"),
					GenOptions{Format: f, Rows: 1_000_000, Seed: 1, DupRate: 0.01, InvalidRate: 0.01})
			}
		}
	})
	if benchFiles.err != nil {
		b.Fatal(benchFiles.err)
	}
	return filepath.Join(benchFiles.dir, string(rune('a'+format))+".xlsx")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchFiles.dir != "" {
		os.RemoveAll(benchFiles.dir)
	}
	os.Exit(code)
}

func benchRead(b *testing.B, format GenFormat) {
	path := benchFile(b, format)
	b.ResetTimer()
	var rows int64
	for b.Loop() {
		n, err := benchQuan(context.Background(), path)
		if err != nil {
			b.Fatal(err)
		}
		rows += n
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkReadInline reads a million-row inline-string xlsx.
func BenchmarkReadInline(b *testing.B) { benchRead(b, GenXLSXInline) }

// BenchmarkReadShared reads a million-row shared-string xlsx.
func BenchmarkReadShared(b *testing.B) { benchRead(b, GenXLSXShared) }
