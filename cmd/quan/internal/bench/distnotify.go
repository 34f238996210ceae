package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/cmd/quan/internal/app"
	"github.com/quanhq/quan/cmd/quan/internal/cli"
	"github.com/quanhq/quan/sheet"
	"github.com/quanhq/quan/tasks"
)

// notifyRuns is `quan bench distribute --notify CHANNELS`: the same
// distribution of one generated file (with phone and mail columns) run
// twice in one process, without notifications and then with them, each
// on a store of its own (a data folder of its own; with --fresh-db a
// MySQL database of its own), so that neither inserts into the other's
// coupons. It prints both, the notifications the second recorded, and the
// ratio of their wall times.
type notifyRuns struct {
	cmd      *Command
	cfg      app.Config // the data folder is the run's, removed after unless kept
	prod     *benchProd
	n        int
	format   sheet.GenFormat
	channels []quan.NotifyType
}

// checkNotifyStore refuses a store the two runs would share: an explicit
// SQLite path, or MySQL without --fresh-db.
func checkNotifyStore(cfg app.Config, prod *benchProd) error {
	return checkRunsStore("--notify", cfg, prod)
}

func (r *notifyRuns) run(ctx context.Context) error {
	out := r.cmd.Stdout
	file := filepath.Join(r.cfg.DataDir, "bench-users.xlsx")
	if _, err := sheet.GenerateFile(file, sheet.GenOptions{Rows: r.n, Seed: 42, Format: r.format}); err != nil {
		return fmt.Errorf("bench: generate users: %w", err)
	}
	names := make([]string, len(r.channels))
	for i, ch := range r.channels {
		names[i] = string(ch)
	}
	list := strings.Join(names, ",")
	fmt.Fprintf(out, "bench distribute: %s; the same file of %s users (phone and mail columns) without and then with notify=%s, each on a store of its own\n",
		r.prod.setup(r.cfg), cli.Thousands(int64(r.n)), list)
	var (
		walls [2]time.Duration
		chunk int
	)
	for i, chs := range [][]quan.NotifyType{{}, r.channels} {
		label := "without notify"
		if i == 1 {
			label = "notify=" + list
		}
		t, wall, counts, err := r.once(ctx, i, file, chs)
		if err != nil {
			return err
		}
		walls[i], chunk = wall, t.ChunkSize
		fmt.Fprintf(out, "bench distribute: %s: %s users, %s issued, wall %s, %s rows/s%s\n", label,
			cli.Thousands(t.Counts.Rows), cli.Thousands(t.Counts.Issued), wall.Round(time.Millisecond),
			cli.Thousands(int64(float64(t.Counts.Rows)/wall.Seconds())), counts)
		if t.Status != quan.TaskSucceeded {
			return fmt.Errorf("bench distribute: %s: task %d %s", label, t.ID, t.Status)
		}
	}
	fmt.Fprintf(out, "bench distribute: notify=%s / without: %.2f× (%s / %s), peak RSS %.0f MB (both runs), chunk %d, %d cores (GOMAXPROCS %d)\n",
		list, walls[1].Seconds()/walls[0].Seconds(), walls[1].Round(time.Millisecond), walls[0].Round(time.Millisecond),
		float64(cli.PeakRSS())/(1<<20), chunk, runtime.NumCPU(), runtime.GOMAXPROCS(0))
	return nil
}

// once runs the distribution of file notifying on chs on a store of its
// own (run i), and returns the task, its wall time and the notifications
// it recorded, as text.
func (r *notifyRuns) once(ctx context.Context, i int, file string, chs []quan.NotifyType) (*quan.Task, time.Duration, string, error) {
	cfg := r.cfg
	cfg.DataDir = filepath.Join(r.cfg.DataDir, fmt.Sprintf("run-%d", i+1))
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, 0, "", err
	}
	drop, err := r.prod.isolate(ctx, r.cmd.Stderr, &cfg)
	if err != nil {
		return nil, 0, "", err
	}
	defer drop()
	a, err := r.cmd.openApp(ctx, cfg, app.Local)
	if err != nil {
		return nil, 0, "", err
	}
	defer a.Close()
	tpl, err := a.CreateDemoTemplate(ctx, int64(r.n))
	if err != nil {
		return nil, 0, "", fmt.Errorf("bench distribute: %w", err)
	}
	runtime.GC()
	t, wall, err := a.RunTask(ctx, file, tasks.NewTask{Name: "bench", TemplateID: tpl.ID, FileName: "bench-users.xlsx", Notify: chs}, nil)
	if err != nil {
		return nil, 0, "", fmt.Errorf("bench distribute: %w", err)
	}
	if len(chs) == 0 {
		return t, wall, "", nil
	}
	cs, err := a.Tasks.Outbox.NotificationCounts(ctx, quan.TaskSource(t.ID))
	if err != nil {
		return nil, 0, "", fmt.Errorf("bench distribute: %w", err)
	}
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%s %s %s", c.Channel, c.Status, cli.Thousands(c.Count))
	}
	return t, wall, "; notifications recorded: " + strings.Join(parts, ", "), nil
}
