package bench

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/cmd/quan/internal/app"
	"github.com/quanhq/quan/cmd/quan/internal/cli"
	"github.com/quanhq/quan/sheet"
)

// benchProd are the flags of `quan bench distribute` for the production
// backends: worker processes, the raw-ingest floor, a database of the
// run's own.
type benchProd struct {
	Workers int
	Bin     string
	Floor   bool
	freshDB
}

// floorConns is how many connections the floor inserts on: the issue's
// reference setup, one per core of the machine it was set on.
const floorConns = 2

func (p *benchProd) register(fs *flag.FlagSet) {
	fs.IntVar(&p.Workers, "workers", 0, "with a nats:// bus: start this many `quan worker --runner=false` processes, which apply chunks next to this one, and stop them at the end")
	fs.StringVar(&p.Bin, "quan-bin", "", "the quan binary --workers run (default: this executable)")
	fs.BoolVar(&p.Floor, "floor", true, "in the same run, before the distribution, time the raw-ingest floor: the coupons it will issue (one per valid user of the file) inserted by the store's own statements into a new table with the columns and indexes of coupons, one transaction per chunk, nothing else (on SQLite in a database file of its own, on MySQL a scratch table coupons_floor on "+fmt.Sprint(floorConns)+" connections; dropped after); then print distribution/floor\n")
	p.registerFreshDB(fs, "bench distribute", "Without it, give an empty database: the coupons of earlier runs slow the inserts")
}

func (p *benchProd) validate(cfg app.Config) error {
	_, _, bus := app.Kinds(cfg)
	switch {
	case p.Workers < 0:
		return cli.Usagef("bench distribute: --workers %d: want 0 or more", p.Workers)
	case p.Workers > 0 && bus != "nats":
		return cli.Usagef("bench distribute: --workers share a task's chunks over the bus: use --bus nats://")
	}
	return p.checkFreshDB(cfg)
}

// setup names the backends and processes of the run.
func (p *benchProd) setup(cfg app.Config) string {
	store, cache, bus := app.Kinds(cfg)
	return fmt.Sprintf("store %s%s, cache %s, bus %s, %d worker processes besides this one, %d cores",
		store, p.database(), cache, bus, p.Workers, runtime.NumCPU())
}

// freshDB is --fresh-db, which `quan bench distribute`, `bench claim` and
// `bench wallet` share: the run goes to a new database on the MySQL
// server --store names, and for a redis cache and a nats bus to a new key
// prefix, stream and namespace (app.Isolate), all dropped at its end.
type freshDB struct {
	FreshDB bool

	cmd string // the bench, to name in messages (default "bench")
	db  string // the database made for the run
}

// registerFreshDB registers --fresh-db for the bench cmd; without says
// what the bench suffers or leaves behind without it.
func (f *freshDB) registerFreshDB(fs *flag.FlagSet, cmd, without string) {
	f.cmd = cmd
	fs.BoolVar(&f.FreshDB, "fresh-db", false, "with a mysql:// store: run in a new database quan_bench_RANDOM on the server --store names (its own database only serves to connect), a redis cache under a new key prefix, a nats bus on a new stream and namespace; all dropped at the end, also when the run fails. "+without)
}

func (f *freshDB) name() string { return cmp.Or(f.cmd, "bench") }

// checkFreshDB refuses --fresh-db on a store other than MySQL.
func (f *freshDB) checkFreshDB(cfg app.Config) error {
	if store, _, _ := app.Kinds(cfg); f.FreshDB && store != app.StoreMySQL {
		return cli.Usagef("%s: --fresh-db makes a MySQL database: use --store mysql://", f.name())
	}
	return nil
}

// database names the database made for the run, for a setup line: "" if
// none.
func (f *freshDB) database() string {
	if f.db == "" {
		return ""
	}
	return " (database " + f.db + ")"
}

// isolate moves cfg onto backends of the run's own, if --fresh-db asks for
// it, and returns the function that drops them (reporting on stderr what
// it could not drop): call it once whatever used them is closed.
func (f *freshDB) isolate(ctx context.Context, stderr io.Writer, cfg *app.Config) (func(), error) {
	if !f.FreshDB {
		return func() {}, nil
	}
	iso, err := app.Isolate(ctx, *cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.name(), err)
	}
	*cfg, f.db = iso.Config, iso.Database
	return func() {
		if err := iso.Drop(ctx); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", f.name(), err)
		}
	}, nil
}

// measureFloor times the raw-ingest floor of a distribution of file from
// tpl: one coupon for each valid user of the file, the first time he is
// named. It runs before the distribution, on the same empty database:
// after it, the million coupons the distribution wrote fill InnoDB's
// buffer pool (128 MiB by default) and the floor's random index inserts
// thrash it, 14–19 s instead of 7 s for a million rows on a 2-core
// machine, which would flatter the distribution.
func (p *benchProd) measureFloor(ctx context.Context, a *app.App, file string, tpl *quan.Template) (ingestFloorRun, error) {
	users, err := fileUsers(file, a.SheetOptions(""))
	if err != nil {
		return ingestFloorRun{}, fmt.Errorf("bench distribute: floor: %w", err)
	}
	raw, err := openBaseline[ingestFloor](ctx, a.Config, floorConns)
	if err != nil {
		return ingestFloorRun{}, fmt.Errorf("bench distribute: floor: %w", err)
	}
	defer raw.Close()
	// A task id of some width, as a distribution's coupons carry one.
	proto := quan.NewCoupon(tpl, 0, 1, 1, time.Now())
	took, perInsert, err := raw.IngestFloor(ctx, proto, users, floorConns)
	if err != nil {
		return ingestFloorRun{}, fmt.Errorf("bench distribute: %w", err)
	}
	conns := floorConns
	if store, _, _ := app.Kinds(a.Config); store == app.StoreSQLite {
		conns = 1 // one writer
	}
	return ingestFloorRun{took: took, rows: len(users), perInsert: perInsert, conns: conns}, nil
}

// ingestFloor is the raw-ingest floor of a store's engine
// (sqlitebase.Baseline, mysqlbase.Baseline), which openBaseline
// opens.
type ingestFloor interface {
	// IngestFloor times inserting one coupon per user, with proto's
	// other columns, as plain multi-row INSERTs on conns connections into
	// a scratch table like coupons, and returns how long it took and the
	// rows an INSERT carried.
	IngestFloor(ctx context.Context, proto quan.Coupon, users []int64, conns int) (time.Duration, int, error)
	Close() error
}

// ingestFloorRun is what measureFloor timed.
type ingestFloorRun struct {
	took      time.Duration
	rows      int // inserted
	perInsert int // rows an INSERT carried
	conns     int // connections it inserted on
}

// floorLine formats the floor's figures and the distribution's ratio to
// it.
func floorLine(f ingestFloorRun, wall time.Duration) string {
	return fmt.Sprintf("raw-ingest floor %s rows in %s, %s rows/s (INSERTs of %s rows on %d connections into a table like coupons, before the distribution), %d cores; distribution/floor %.2f×",
		cli.Thousands(int64(f.rows)), f.took.Round(time.Millisecond), cli.Thousands(int64(float64(f.rows)/f.took.Seconds())),
		cli.Thousands(int64(f.perInsert)), f.conns, runtime.NumCPU(), wall.Seconds()/f.took.Seconds())
}

// fileUsers returns the valid users of file in file order, each the first
// time it is named: those a distribution issues to with enough stock.
func fileUsers(file string, opt sheet.Options) ([]int64, error) {
	r, err := sheet.OpenRows(file, opt)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var users []int64
	buf := make([]quan.FileRow, 1024)
	for {
		n, err := r.Read(buf)
		for _, row := range buf[:n] {
			if id, ok := quan.ParseUserID(row.UserID); ok && !row.Inexact {
				users = append(users, id)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	// Drop repeats, keeping the first: sorted, a repeat is next to its
	// first, and the generated files have none, so the map stays small.
	sorted := slices.Clone(users)
	slices.Sort(sorted)
	repeated := map[int64]bool{}
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			repeated[sorted[i]] = false
		}
	}
	if len(repeated) == 0 {
		return users, nil
	}
	return slices.DeleteFunc(users, func(u int64) bool {
		seen, ok := repeated[u]
		if ok {
			repeated[u] = true
		}
		return seen
	}), nil
}

// benchWorkers are `quan worker --runner=false` processes applying the
// chunks of the bench's task next to the bench's own consumer.
type benchWorkers struct {
	procs []*workerProc
	once  sync.Once
	err   error
}

type workerProc struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once Wait returns
	err    error         // Wait's, once exited
}

// startBenchWorkers starts n workers on cfg's backends, from bin or this
// executable, and returns once each says it runs. Their log goes to
// stderr, each line marked with the worker's number.
func startBenchWorkers(ctx context.Context, stderr io.Writer, bin string, n int, cfg app.Config) (*benchWorkers, error) {
	w := &benchWorkers{}
	if n == 0 {
		return w, nil
	}
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("bench distribute: --workers: %w", err)
		}
	}
	level := "info" // the line saying the worker runs is at info
	if cfg.LogLevel == "debug" {
		level = "debug"
	}
	args := []string{"worker", "--runner=false", "--admin-addr", "", "--data", cfg.DataDir, "--store", cfg.StoreURL,
		"--bus", cfg.BusURL, "--log-level", level, "--chunk-ack-wait", cfg.Runner.AckWait.String()}
	if cfg.CacheURL != "" {
		args = append(args, "--cache", cfg.CacheURL)
	}
	for i := range n {
		ready := make(chan struct{})
		out := &workerLog{prefix: fmt.Sprintf("worker %d: ", i+1), w: stderr, ready: ready}
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			w.stop()
			return nil, fmt.Errorf("bench distribute: start worker %d: %w", i+1, err)
		}
		p := &workerProc{cmd: cmd, exited: make(chan struct{})}
		go func() {
			p.err = cmd.Wait()
			close(p.exited)
		}()
		w.procs = append(w.procs, p)
		select {
		case <-ready:
		case <-p.exited:
			w.stop()
			return nil, fmt.Errorf("bench distribute: worker %d exited at start: %v", i+1, p.err)
		case <-time.After(30 * time.Second):
			w.stop()
			return nil, fmt.Errorf("bench distribute: worker %d did not start within 30s", i+1)
		case <-ctx.Done():
			w.stop()
			return nil, ctx.Err()
		}
	}
	return w, nil
}

// stop asks every worker to stop (SIGTERM) and waits for them, killing
// one that takes over 30 s. It reports a worker that failed; a second
// call returns the first's result.
func (w *benchWorkers) stop() error {
	w.once.Do(func() {
		for _, p := range w.procs {
			p.cmd.Process.Signal(syscall.SIGTERM)
		}
		var errs []error
		for i, p := range w.procs {
			select {
			case <-p.exited:
			case <-time.After(30 * time.Second):
				p.cmd.Process.Kill()
				<-p.exited
			}
			if p.err != nil {
				errs = append(errs, fmt.Errorf("worker %d: %w", i+1, p.err))
			}
		}
		if len(errs) > 0 {
			w.err = fmt.Errorf("bench distribute: %w", errors.Join(errs...))
		}
	})
	return w.err
}

// workerLog copies a worker's output to w line by line, each line after
// prefix, and closes ready at the line saying the worker runs.
type workerLog struct {
	prefix string
	w      io.Writer
	ready  chan struct{}
	buf    []byte
}

func (l *workerLog) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := l.buf[:i+1]
		if l.ready != nil && bytes.Contains(line, []byte("quan worker running")) {
			close(l.ready)
			l.ready = nil
		}
		fmt.Fprintf(l.w, "%s%s", l.prefix, line)
		l.buf = l.buf[i+1:]
	}
}
