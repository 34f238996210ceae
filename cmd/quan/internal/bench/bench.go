// Package bench is `quan bench`: commands that print speed and memory
// figures of quan on the backends they are given, and verify what they
// drove. They assert no timing; the figures go to BENCHMARKS.md. It
// reaches quan through the wiring (package app) and the root's
// interfaces only.
package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/cmd/quan/internal/app"
	"github.com/quanhq/quan/cmd/quan/internal/cli"
	"github.com/quanhq/quan/sheet"
	"github.com/quanhq/quan/tasks"
)

// Command runs one benchmark.
type Command struct {
	Stdout, Stderr io.Writer
	Getenv         func(string) string // QUAN_* fallbacks of the flags
	Now            func() time.Time    // nil: time.Now
}

// usage is the help of quan bench.
const usage = `Usage: quan bench BENCHMARK [flags]

  distribute            measure a distribution end to end
  read                  measure the spreadsheet reader against excelize
  claim                 load the claim API over HTTP and verify no claim is lost
  wallet lock           lock+redeem orders, against the raw SQL loop
  wallet sweep          the expiry sweep
  wallet remind         expiry reminders
  stats                 p99 of GET /templates/{id}/stats with 10 million coupons
  shopper               p99 of the wallet with display and of the claim centre
  notify                SMS/s and emails/s of the dispatcher to a local gateway and SMTP server
  conns                 slow, stalled or idle connections held by quan serve, and their memory

Run 'quan bench BENCHMARK -h' for a benchmark's flags.
`

// Run dispatches "distribute", "read", "claim", "wallet", "stats", "shopper",
// "notify" and "conns"; -h prints the benchmarks to Stdout and returns cli.ErrHelp.
func (c *Command) Run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return &cli.UsageError{Msg: "bench: say what to measure: distribute, read, claim, wallet, stats, shopper, notify or conns", Cmd: "bench"}
	}
	if cli.IsHelp(args[0]) {
		fmt.Fprint(c.Stdout, usage)
		return cli.ErrHelp
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
	case "stats":
		return c.stats(ctx, args[1:])
	case "shopper":
		return c.shopper(ctx, args[1:])
	case "notify":
		return c.notify(ctx, args[1:])
	case "conns":
		return c.conns(ctx, args[1:])
	case "read-child": // one measurement of "bench read", in a process of its own
		return readChild(ctx, c.Stdout, args[1:])
	}
	return &cli.UsageError{Msg: fmt.Sprintf("bench: unknown benchmark %q: use distribute, read, claim, wallet, stats, shopper, notify or conns", args[0]), Cmd: "bench"}
}

// parse parses a benchmark's flags, with QUAN_* variables as fallback.
func (c *Command) parse(fs *flag.FlagSet, args []string) error {
	_, err := cli.Parse(fs, args, c.Getenv, c.Stdout)
	return err
}

// openApp opens quan wired for role on cfg, logging to stderr.
func (c *Command) openApp(ctx context.Context, cfg app.Config, role app.Role) (*app.App, error) {
	cfg.Now = c.Now
	logger, err := cfg.NewLogger(c.Stderr)
	if err != nil {
		return nil, err
	}
	return app.Open(ctx, cfg, role, logger)
}

// distribute measures one distribution of n generated users, from the
// file on disk to the task succeeded with its report, on the backends the
// flags name (the embedded default unless told). The file is generated
// first and not timed. With --workers, worker processes apply chunks
// next to this one; with --floor, the raw-ingest floor of the same
// coupons is measured before it (prod.go).
func (c *Command) distribute(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench distribute", flag.ContinueOnError)
	var cfg app.Config
	cfg.Register(fs, app.Local)
	n := fs.Int("n", 1_000_000, "users in the file")
	shared := fs.Bool("shared", false, "the file uses shared strings")
	keep := fs.Bool("keep", false, "keep the data folder (default: a fresh temporary one, removed after)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the distribution to this file")
	notify := fs.String("notify", "", "run the distribution twice, without notifications and then notifying on these channels (inbox,popup,email,sms), each on a store of its own, and print both and their ratio (no floor)")
	segment := fs.String("segment", "", "run twice, distributing the users this rule matches (CEL over user facts, e.g. 'user.level >= 2') "+
		"as a file of them and then as a segment of the -n users given facts first (level 0-3 at random, half tagged vip), "+
		"each on a store of its own, and print both and their ratio (no floor; --cpuprofile profiles the segment's run)")
	var prod benchProd
	prod.register(fs)
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if err := prod.validate(cfg); err != nil {
		return err
	}
	if *segment != "" {
		if *notify != "" {
			return cli.Usagef("bench distribute: --segment and --notify each compare two runs: give one")
		}
		if err := checkRunsStore("--segment", cfg, &prod); err != nil {
			return err
		}
	}
	var channels []quan.NotifyType
	if *notify != "" {
		var err error
		if channels, err = quan.ParseNotifyTypes(*notify); err != nil {
			return cli.Usagef("bench distribute: --notify: %v", err)
		}
		if err := checkNotifyStore(cfg, &prod); err != nil {
			return err
		}
	}
	if !*keep && !cli.IsSet(fs, "data") {
		dir, err := os.MkdirTemp("", "quan-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cfg.DataDir = dir
	}
	if *segment != "" {
		r := segmentRuns{cmd: c, cfg: cfg, prod: &prod, n: *n, rule: *segment, cpuprofile: *cpuprofile}
		return r.run(ctx)
	}
	if len(channels) > 0 {
		format := sheet.GenXLSXInline
		if *shared {
			format = sheet.GenXLSXShared
		}
		r := notifyRuns{cmd: c, cfg: cfg, prod: &prod, n: *n, format: format, channels: channels}
		return r.run(ctx)
	}
	if prod.FreshDB {
		iso, err := app.Isolate(ctx, cfg)
		if err != nil {
			return fmt.Errorf("bench distribute: %w", err)
		}
		defer func() {
			if err := iso.Drop(ctx); err != nil {
				fmt.Fprintf(c.Stderr, "bench distribute: %v\n", err)
			}
		}()
		cfg, prod.db = iso.Config, iso.Database
	}
	a, err := c.openApp(ctx, cfg, app.Local)
	if err != nil {
		return err
	}
	defer a.Close()
	tpl, err := a.CreateDemoTemplate(ctx, int64(*n))
	if err != nil {
		return fmt.Errorf("bench distribute: %w", err)
	}
	file := filepath.Join(a.Config.DataDir, "bench-users.xlsx")
	format := sheet.GenXLSXInline
	if *shared {
		format = sheet.GenXLSXShared
	}
	if _, err := sheet.GenerateFile(file, sheet.GenOptions{Rows: *n, Seed: 42, Format: format}); err != nil {
		return fmt.Errorf("bench: generate users: %w", err)
	}
	fmt.Fprintf(c.Stdout, "bench distribute: %s\n", prod.setup(a.Config))
	var floor ingestFloorRun
	if prod.Floor {
		if floor, err = prod.measureFloor(ctx, a, file, tpl); err != nil {
			return err
		}
	}
	workers, err := startBenchWorkers(ctx, c.Stderr, prod.Bin, prod.Workers, a.Config)
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
	t, wall, err := a.RunTask(ctx, file, tasks.NewTask{Name: "bench", TemplateID: tpl.ID, FileName: "bench-users.xlsx"}, nil)
	if err != nil {
		return fmt.Errorf("bench distribute: %w", err)
	}
	pprof.StopCPUProfile()
	if err := workers.stop(); err != nil {
		return err
	}
	fmt.Fprintf(c.Stdout, "bench distribute: %s users, %s issued, wall %s, %s rows/s, peak RSS %.0f MB, chunk %d, %d cores (GOMAXPROCS %d)\n",
		cli.Thousands(t.Counts.Rows), cli.Thousands(t.Counts.Issued), wall.Round(time.Millisecond),
		cli.Thousands(int64(float64(t.Counts.Rows)/wall.Seconds())), float64(cli.PeakRSS())/(1<<20), t.ChunkSize,
		runtime.NumCPU(), runtime.GOMAXPROCS(0))
	if prod.Floor {
		fmt.Fprintf(c.Stdout, "bench distribute: %s\n", floorLine(floor, wall))
	}
	if t.Status != quan.TaskSucceeded {
		return fmt.Errorf("bench distribute: task %d %s", t.ID, t.Status)
	}
	return nil
}

// read measures quan's spreadsheet reader against excelize's streaming
// Rows() on the same generated files, each in a child process of its own
// so that each peak RSS belongs to one reader.
func (c *Command) read(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench read", flag.ContinueOnError)
	n := fs.Int("n", 1_000_000, "rows per generated file")
	dir := fs.String("dir", "", "keep the generated files here (default: a temporary folder)")
	quanOnly := fs.Bool("quan-only", false, "measure quan's reader only")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	opt := readOptions{Rows: *n, Dir: *dir, ChildArgs: []string{"bench", "read-child"}}
	if *quanOnly {
		opt.Readers = []string{"quan"}
	}
	fmt.Fprintf(c.Stdout, "bench read: %d cores (GOMAXPROCS %d)\n", runtime.NumCPU(), runtime.GOMAXPROCS(0))
	return benchRead(ctx, c.Stdout, opt)
}
