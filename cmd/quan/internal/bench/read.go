package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/quanhq/quan/sheet"
)

// readOptions configures benchRead. The zero value benchmarks a million rows
// of each file kind with both readers, re-executing the running binary
// (os.Executable) with ChildArgs.
type readOptions struct {
	// Rows per generated file; 0 means 1,000,000.
	Rows int
	// Dir receives the generated files; "" means a temporary directory
	// removed afterwards.
	Dir string
	// Readers to measure, among "quan" and "excelize"; nil means both.
	Readers []string
	// ChildArgs come before the measurement arguments when benchRead re-runs
	// the binary: the binary wires them to readChild. For example
	// cmd/quan can run benchRead for "quan bench read -n N" with ChildArgs
	// {"bench", "read-child"} and map "quan bench read-child ARGS..." to
	// readChild(ctx, os.Stdout, ARGS).
	ChildArgs []string
	// Command, if set, builds the child command for the given measurement
	// arguments instead (tests use it to run the test binary).
	Command func(ctx context.Context, args []string) *exec.Cmd
}

// benchRead generates an inline-string and a shared-string xlsx and, for each,
// measures every reader in a child process of its own, so that each
// figure of peak RSS belongs to one reader and one file. It writes a
// table to w: rows/s, wall time, CPU time and peak RSS per measurement.
func benchRead(ctx context.Context, w io.Writer, opt readOptions) error {
	if opt.Rows <= 0 {
		opt.Rows = 1_000_000
	}
	if opt.Readers == nil {
		opt.Readers = []string{"quan", "excelize"}
	}
	if opt.Command == nil {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		prefix := opt.ChildArgs
		opt.Command = func(ctx context.Context, args []string) *exec.Cmd {
			return exec.CommandContext(ctx, exe, append(append([]string(nil), prefix...), args...)...)
		}
	}
	dir := opt.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "quan-bench-")
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	fmt.Fprintf(w, "%d CPUs, GOMAXPROCS %d, %s/%s, %d rows per file\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, opt.Rows)
	fmt.Fprintf(w, "%-7s %9s %-9s %9s %8s %8s %12s %10s\n", "file", "size", "reader", "rows", "wall", "cpu", "rows/s", "peak RSS")
	for _, kind := range []struct {
		name   string
		format sheet.GenFormat
	}{{"inline", sheet.GenXLSXInline}, {"shared", sheet.GenXLSXShared}} {
		path := filepath.Join(dir, kind.name+".xlsx")
		if _, err := sheet.GenerateFile(path, sheet.GenOptions{Format: kind.format, Rows: opt.Rows, Seed: 1, DupRate: 0.01, InvalidRate: 0.01}); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		for _, reader := range opt.Readers {
			if err := ctx.Err(); err != nil {
				return err
			}
			var out strings.Builder
			cmd := opt.Command(ctx, []string{"-reader", reader, "-file", path})
			cmd.Stdout = &out
			cmd.Stderr = os.Stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("bench: %s on %s: %w", reader, kind.name, err)
			}
			res, err := parseBenchLine(out.String())
			if err != nil {
				return fmt.Errorf("bench: %s on %s: %w", reader, kind.name, err)
			}
			cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			rss := maxRSS(cmd.ProcessState)
			fmt.Fprintf(w, "%-7s %8.1fM %-9s %9d %7.2fs %7.2fs %12.0f %9.1fM\n", kind.name, float64(fi.Size())/1e6, reader,
				res.rows, res.wall.Seconds(), cpu.Seconds(), float64(res.rows)/res.wall.Seconds(), float64(rss)/(1<<20))
		}
	}
	return nil
}

type benchResult struct {
	rows int64
	wall time.Duration
}

func parseBenchLine(s string) (benchResult, error) {
	var r benchResult
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(line, "sheet-bench ") {
			continue
		}
		for _, kv := range strings.Fields(line)[1:] {
			k, v, _ := strings.Cut(kv, "=")
			n, err := strconv.ParseInt(v, 10, 64)
			switch {
			case k == "rows" && err == nil:
				r.rows = n
			case k == "ns" && err == nil:
				r.wall = time.Duration(n)
			}
		}
		if r.wall > 0 {
			return r, nil
		}
	}
	return r, fmt.Errorf("child printed no result: %q", s)
}

// readChild runs one measurement of benchRead in the current process and
// prints one result line to w. args are flags: -reader quan|excelize and
// -file PATH. A binary calls it from the subcommand that benchRead's
// ChildArgs name.
func readChild(ctx context.Context, w io.Writer, args []string) error {
	fs := flag.NewFlagSet("bench-child", flag.ContinueOnError)
	reader := fs.String("reader", "quan", "reader to measure: quan or excelize")
	path := fs.String("file", "", "xlsx file to read")
	if err := fs.Parse(args); err != nil {
		return err
	}
	start := time.Now()
	var n int64
	var err error
	switch *reader {
	case "quan":
		n, err = benchQuan(ctx, *path)
	case "excelize":
		n, err = benchExcelize(ctx, *path)
	default:
		err = fmt.Errorf("unknown reader %q", *reader)
	}
	if err != nil {
		return fmt.Errorf("bench child: %w", err)
	}
	d := time.Since(start)
	_, err = fmt.Fprintf(w, "sheet-bench reader=%s rows=%d ns=%d\n", *reader, n, d.Nanoseconds())
	return err
}

func benchQuan(ctx context.Context, path string) (int64, error) {
	r, err := sheet.Open(path, sheet.Options{})
	if err != nil {
		return 0, err
	}
	defer r.Close()
	buf := make([]sheet.Row, 5000)
	var n int64
	for {
		k, err := r.Read(buf)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n += int64(k)
		if n%(1<<20) < int64(k) && ctx.Err() != nil {
			return n, ctx.Err()
		}
	}
}

// benchExcelize counts the non-blank rows after the header with
// excelize's streaming Rows, the way a caller of excelize would.
func benchExcelize(ctx context.Context, path string) (int64, error) {
	f, err := excelize.OpenFile(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	rows, err := f.Rows(f.GetSheetList()[0])
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var n int64
	for rows.Next() {
		cells, err := rows.Columns()
		if err != nil {
			return n, err
		}
		if len(cells) > 0 {
			n++
		}
		if n%(1<<20) == 0 && ctx.Err() != nil {
			return n, ctx.Err()
		}
	}
	return n - 1, rows.Error() // header
}
