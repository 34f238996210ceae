package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/cmd/quan/internal/app"
	"github.com/quanhq/quan/cmd/quan/internal/cli"
	"github.com/quanhq/quan/sheet"
	"github.com/quanhq/quan/tasks"
)

// segmentRuns is `quan bench distribute --segment RULE`: n generated
// users get facts (member level 0–3 at random, every other one tagged
// vip), and the users RULE matches are distributed twice, each on a store
// of its own: first as a file of them (CSV, one user id a row in
// ascending order: the file the segment freezes, so the difference is
// the segment's own cost), then as a segment of the users on file. Only
// the distributions are timed, each from its start (the upload; the
// segment's first read of facts) to the task's end; the facts are loaded
// before, by an earlier opening of the store.
type segmentRuns struct {
	cmd        *Command
	cfg        app.Config // the data folder is the run's, removed after unless kept
	prod       *benchProd
	n          int
	rule       string
	cpuprofile string // of the segment's run
}

// checkRunsStore refuses a store two runs would share: an explicit SQLite
// path, or MySQL without --fresh-db, and workers.
func checkRunsStore(flagName string, cfg app.Config, prod *benchProd) error {
	store, _, _ := app.Kinds(cfg)
	switch {
	case store == app.StoreSQLite && cfg.StoreURL != "" && cfg.StoreURL != "sqlite:":
		return cli.Usagef("bench distribute: %s runs twice, each on a database of its own in the data folder: leave --store at sqlite:", flagName)
	case store == app.StoreMySQL && !prod.FreshDB:
		return cli.Usagef("bench distribute: %s runs twice, each on a database of its own: add --fresh-db", flagName)
	case prod.Workers > 0:
		return cli.Usagef("bench distribute: %s runs in this process alone: leave out --workers", flagName)
	}
	return nil
}

func (r *segmentRuns) run(ctx context.Context) error {
	out := r.cmd.Stdout
	facts, err := r.facts()
	if err != nil {
		return err
	}
	file := filepath.Join(r.cfg.DataDir, "bench-segment-users.csv")

	var (
		walls [2]time.Duration
		chunk int
	)
	var matched int64
	for i, label := range []string{"file", "segment"} {
		t, wall, frozen, err := r.once(ctx, i, file, facts, &matched)
		if err != nil {
			return err
		}
		walls[i], chunk = wall, t.ChunkSize
		extra := ""
		if i == 1 {
			extra = fmt.Sprintf(", of which the segment read and frozen %s", frozen.Round(time.Millisecond))
		}
		fmt.Fprintf(out, "bench distribute: %s: %s users, %s issued, wall %s, %s rows/s%s\n", label,
			cli.Thousands(t.Counts.Rows), cli.Thousands(t.Counts.Issued), wall.Round(time.Millisecond),
			cli.Thousands(int64(float64(t.Counts.Rows)/wall.Seconds())), extra)
		if t.Status != quan.TaskSucceeded || t.Counts.Issued != matched {
			return fmt.Errorf("bench distribute: %s: task %d %s with %d issued, want %d", label, t.ID, t.Status, t.Counts.Issued, matched)
		}
	}
	fmt.Fprintf(out, "bench distribute: segment / file: %.2f× (%s / %s), peak RSS %.0f MB (both runs), chunk %d, %d cores (GOMAXPROCS %d)\n",
		walls[1].Seconds()/walls[0].Seconds(), walls[1].Round(time.Millisecond), walls[0].Round(time.Millisecond),
		float64(cli.PeakRSS())/(1<<20), chunk, runtime.NumCPU(), runtime.GOMAXPROCS(0))
	return nil
}

// facts are the facts of n generated users (the ids of `quan gen-users`
// with seed 42), the same on every run.
func (r *segmentRuns) facts() ([]quan.UserFacts, error) {
	gen := filepath.Join(r.cfg.DataDir, "bench-all-users.csv")
	if _, err := sheet.GenerateFile(gen, sheet.GenOptions{Rows: r.n, Seed: 42, Format: sheet.GenCSV}); err != nil {
		return nil, fmt.Errorf("bench: generate users: %w", err)
	}
	defer os.Remove(gen)
	rows, err := sheet.OpenRows(gen, sheet.Options{})
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	rng := rand.New(rand.NewPCG(42, 7))
	facts := make([]quan.UserFacts, 0, r.n)
	buf := make([]quan.FileRow, 1024)
	for {
		k, err := rows.Read(buf)
		for _, fr := range buf[:k] {
			id, ok := quan.ParseUserID(fr.UserID)
			if !ok {
				return nil, fmt.Errorf("bench: generated user %q is not a user id", fr.UserID)
			}
			f := quan.UserFacts{UserID: id, Level: rng.Int64N(4), Tags: []string{}}
			if rng.IntN(2) == 0 {
				f.Tags = append(f.Tags, "vip")
			}
			facts = append(facts, f)
		}
		if errors.Is(err, io.EOF) {
			return facts, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// writeUserIDs writes ids as a CSV file of one user id a row.
func writeUserIDs(path string, ids []int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 64<<10)
	w.WriteString("userId\n")
	for _, id := range ids {
		w.WriteString(strconv.FormatInt(id, 10))
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// matchFile writes to file the users of facts the segment matches, in
// ascending order, as the app's rule engine decides, and returns how many.
func (r *segmentRuns) matchFile(a *app.App, file string, facts []quan.UserFacts) (int64, error) {
	rule, err := a.Tasks.Rules.Compile(quan.RuleSegment, r.rule)
	if err != nil {
		return 0, cli.Usagef("bench distribute: --segment: %v", err)
	}
	now := time.Now()
	var match []int64
	for i := range facts {
		if ok, _ := rule.Eval(&facts[i], nil, now); ok {
			match = append(match, facts[i].UserID)
		}
	}
	if len(match) == 0 {
		return 0, cli.Usagef("bench distribute: --segment %q matches none of the %d users (level 0-3, half tagged vip)", r.rule, r.n)
	}
	slices.Sort(match)
	fmt.Fprintf(r.cmd.Stdout, "bench distribute: %s; %s users with facts (level 0-3 at random, half tagged vip), %s of them matching %s, "+
		"distributed as a file of them (CSV, ascending ids) and as a segment, each on a store of its own\n",
		r.prod.setup(r.cfg), cli.Thousands(int64(r.n)), cli.Thousands(int64(len(match))), r.rule)
	return int64(len(match)), writeUserIDs(file, match)
}

// loadFacts puts facts in the store of cfg and closes it, as an import
// long before the distribution would: closing SQLite's last connection
// moves its WAL into the database file, which the distribution would
// otherwise do on its first checkpoint.
func (r *segmentRuns) loadFacts(ctx context.Context, cfg app.Config, facts []quan.UserFacts) error {
	a, err := r.cmd.openApp(ctx, cfg, app.Local)
	if err != nil {
		return err
	}
	defer a.Close()
	const batch = 50_000
	for start := 0; start < len(facts); start += batch {
		if err := a.Backends.Store.PutUserFacts(ctx, time.Now(), facts[start:min(start+batch, len(facts))]); err != nil {
			return fmt.Errorf("bench distribute: load facts: %w", err)
		}
	}
	return nil
}

// once runs the distribution of run i on a store of its own: 0 the file
// of the matching users (written first, their number set in matched), 1
// the segment over the facts, loaded first (loadFacts). It returns the
// task, its wall time and, for the segment, the time until the task was
// created (its users read and frozen).
func (r *segmentRuns) once(ctx context.Context, i int, file string, facts []quan.UserFacts, matched *int64) (*quan.Task, time.Duration, time.Duration, error) {
	cfg := r.cfg
	cfg.DataDir = filepath.Join(r.cfg.DataDir, fmt.Sprintf("run-%d", i+1))
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, 0, 0, err
	}
	drop, err := r.prod.isolate(ctx, r.cmd.Stderr, &cfg)
	if err != nil {
		return nil, 0, 0, err
	}
	defer drop()
	if i == 1 {
		if err := r.loadFacts(ctx, cfg, facts); err != nil {
			return nil, 0, 0, err
		}
	}
	a, err := r.cmd.openApp(ctx, cfg, app.Local)
	if err != nil {
		return nil, 0, 0, err
	}
	defer a.Close()
	if i == 0 {
		if *matched, err = r.matchFile(a, file, facts); err != nil {
			return nil, 0, 0, err
		}
	}
	tpl, err := a.CreateDemoTemplate(ctx, *matched)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("bench distribute: %w", err)
	}
	in := tasks.NewTask{Name: "bench", TemplateID: tpl.ID, FileName: filepath.Base(file)}
	if i == 1 {
		in, file = tasks.NewTask{Name: "bench", TemplateID: tpl.ID, Segment: r.rule}, ""
		if r.cpuprofile != "" {
			f, err := os.Create(r.cpuprofile)
			if err != nil {
				return nil, 0, 0, fmt.Errorf("bench: %w", err)
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				return nil, 0, 0, fmt.Errorf("bench: %w", err)
			}
			defer pprof.StopCPUProfile()
		}
	}
	runtime.GC()
	start := time.Now()
	t, wall, err := a.RunTask(ctx, file, in, nil)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("bench distribute: %w", err)
	}
	// CreatedAt is taken once the segment is frozen (on the real clock:
	// a benchmark sets no Now).
	return t, wall, t.CreatedAt.Sub(start), nil
}
