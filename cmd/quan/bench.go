package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/sheet"
)

// BenchCommand prints speed and memory figures; it asserts nothing.
type BenchCommand struct {
	Main *Main
}

// Run dispatches "bench distribute", "bench read", "bench claim" and
// "bench wallet".
func (c *BenchCommand) Run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("bench: say what to measure: distribute, read, claim or wallet")
	}
	switch args[0] {
	case "distribute":
		return c.distribute(ctx, args[1:])
	case "read":
		return c.read(ctx, args[1:])
	case "claim":
		return c.claim(ctx, args[1:])
	case "wallet":
		return c.wallet(ctx, args[1:])
	case "read-child": // one measurement of "bench read", in a process of its own
		return sheet.BenchChild(ctx, c.Main.Stdout, args[1:])
	}
	return fmt.Errorf("bench: unknown benchmark %q: use distribute, read, claim or wallet", args[0])
}

// distribute measures one distribution of n generated users, from the
// file on disk to the task succeeded with its report, on the backends the
// flags name (the embedded default unless told). The file is generated
// first and not timed. With --workers, worker processes apply chunks
// next to this one; with --floor, the raw-ingest floor of the same
// coupons is measured after it (bench_prod.go).
func (c *BenchCommand) distribute(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench distribute", flag.ContinueOnError)
	local := localFlags{}
	local.register(fs)
	n := fs.Int("n", 1_000_000, "users in the file")
	shared := fs.Bool("shared", false, "the file uses shared strings")
	keep := fs.Bool("keep", false, "keep the data folder (default: a fresh temporary one, removed after)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the distribution to this file")
	var prod benchProd
	prod.register(fs)
	if err := c.Main.parseFlags(fs, args); err != nil {
		return err
	}
	if err := prod.validate(local); err != nil {
		return err
	}
	if !*keep && !flagSet(fs, "data") {
		dir, err := os.MkdirTemp("", "quan-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		local.DataDir = dir
	}
	if prod.FreshDB {
		dropDB, err := prod.isolate(ctx, c.Main, &local)
		if err != nil {
			return err
		}
		defer dropDB()
	}
	a, b, closeBackends, err := local.openBackends(ctx, c.Main)
	if err != nil {
		return err
	}
	defer closeBackends()
	if prod.FreshDB {
		defer prod.dropShared(c.Main, b)
	}
	tpl, err := createDemoTemplate(ctx, c.Main, a, int64(*n))
	if err != nil {
		return err
	}
	file := filepath.Join(local.DataDir, "bench-users.xlsx")
	format := sheet.GenXLSXInline
	if *shared {
		format = sheet.GenXLSXShared
	}
	if _, err := sheet.GenerateFile(file, sheet.GenOptions{Rows: *n, Seed: 42, Format: format}); err != nil {
		return fmt.Errorf("bench: generate users: %w", err)
	}
	fmt.Fprintf(c.Main.Stdout, "bench distribute: %s\n", prod.setup(local))
	var (
		floor     time.Duration
		floorRows int
	)
	if prod.Floor {
		if floor, floorRows, err = prod.measureFloor(ctx, local, file, tpl); err != nil {
			return err
		}
	}
	workers, err := startBenchWorkers(ctx, c.Main, prod.Bin, prod.Workers, local)
	if err != nil {
		return err
	}
	defer workers.stop()
	runtime.GC()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	t, wall, err := runLocalTask(ctx, c.Main, a, file, quan.NewTask{Name: "bench", TemplateID: tpl.ID, FileName: "bench-users.xlsx"})
	if err != nil {
		return err
	}
	pprof.StopCPUProfile()
	if err := workers.stop(); err != nil {
		return err
	}
	fmt.Fprintf(c.Main.Stdout, "bench distribute: %s users, %s issued, wall %s, %s rows/s, peak RSS %.0f MB, chunk %d, %d cores (GOMAXPROCS %d)\n",
		thousands(t.Counts.Rows), thousands(t.Counts.Issued), wall.Round(time.Millisecond),
		thousands(int64(float64(t.Counts.Rows)/wall.Seconds())), float64(peakRSS())/(1<<20), t.ChunkSize,
		runtime.NumCPU(), runtime.GOMAXPROCS(0))
	if prod.Floor {
		fmt.Fprintf(c.Main.Stdout, "bench distribute: %s\n", floorLine(floorRows, floor, wall))
	}
	return taskExit(t)
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// read measures quan's spreadsheet reader against excelize's streaming
// Rows() on the same generated files, each in a child process of its own
// so that each peak RSS belongs to one reader.
func (c *BenchCommand) read(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench read", flag.ContinueOnError)
	n := fs.Int("n", 1_000_000, "rows per generated file")
	dir := fs.String("dir", "", "keep the generated files here (default: a temporary folder)")
	quanOnly := fs.Bool("quan-only", false, "measure quan's reader only")
	if err := c.Main.parseFlags(fs, args); err != nil {
		return err
	}
	opt := sheet.BenchOptions{Rows: *n, Dir: *dir, ChildArgs: []string{"bench", "read-child"}}
	if *quanOnly {
		opt.Readers = []string{"quan"}
	}
	fmt.Fprintf(c.Main.Stdout, "bench read: %d cores (GOMAXPROCS %d)\n", runtime.NumCPU(), runtime.GOMAXPROCS(0))
	return sheet.Bench(ctx, c.Main.Stdout, opt)
}
