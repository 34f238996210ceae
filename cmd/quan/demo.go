package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/cmd/quan/internal/app"
	"github.com/quanhq/quan/cmd/quan/internal/cli"
	"github.com/quanhq/quan/sheet"
	"github.com/quanhq/quan/tasks"
)

// DemoCommand shows quan's main job end to end: a template, a generated
// file of users, and its distribution with a progress bar. Interrupted,
// the distribution stays unfinished in the data folder and the next demo
// resumes it rather than start another (unless --new).
type DemoCommand struct {
	Main *Main
}

// Run parses args and runs the demo.
func (c *DemoCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	var cfg app.Config
	cfg.Register(fs, app.Local)
	n := fs.Int("n", 1_000_000, "target users in the generated file")
	isNew := fs.Bool("new", false, "start a new demo even if an earlier one was interrupted (by default a rerun resumes it; both then run)")
	var out outputFlags
	out.register(fs)
	if _, err := c.Main.parse(fs, args); err != nil {
		return err
	}
	if *n < 1 {
		return cli.Usagef("demo: -n %d: want at least 1", *n)
	}
	if err := cli.CheckOutput(out.Format); err != nil {
		return err
	}
	cfg.Now = c.Main.Now
	logger, err := cfg.NewLogger(c.Main.Stderr)
	if err != nil {
		return err
	}
	a, err := app.Open(ctx, cfg, app.Local, logger)
	if err != nil {
		return err
	}
	defer a.Close()
	// With --output json, stdout carries the summary alone.
	info := c.Main.Stdout
	if out.Format == cli.OutputJSON {
		info = io.Discard
	}
	unfinished, err := a.Unfinished(ctx)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	resume, err := pick(c.Main.Stderr, unfinished, func(t *quan.Task) bool { return t.Name == demoTask }, *isNew, a.Config.DataDir, "demo")
	if err != nil {
		return err
	}
	p := out.progress(c.Main.Stderr)
	var (
		t    *quan.Task
		wall time.Duration
	)
	if resume != nil {
		t, wall, err = a.ResumeTask(ctx, resume, p.Update)
	} else {
		t, wall, err = c.start(ctx, a, *n, info, p)
	}
	if err != nil {
		p.Stop()
		return interrupted(fmt.Errorf("demo: %w", err))
	}
	p.Done(t, wall)
	sum := cli.Summary{Task: t, Wall: wall, Report: t.ReportPath, TemplateID: t.TemplateID, PeakRSS: cli.PeakRSS()}
	if err := sum.Write(c.Main.Stdout, out.Format); err != nil {
		return err
	}
	return taskExit(t)
}

// demoTask names the demo's tasks: a demo resumes an unfinished one.
const demoTask = "demo"

// start makes the demo's template and file of n users, telling info,
// and runs its task.
func (c *DemoCommand) start(ctx context.Context, a *app.App, n int, info io.Writer, p *cli.Progress) (*quan.Task, time.Duration, error) {
	// 1% duplicate and 0.5% invalid rows, and stock for 98% of the rows,
	// so the summary shows each way a row can fail.
	stock := max(1, int64(n)-int64(n)/50)
	tpl, err := a.CreateDemoTemplate(ctx, stock)
	if err != nil {
		return nil, 0, err
	}
	fmt.Fprintf(info, "template %d: %s, stock %s, one per user\n", tpl.ID, tpl.Name, cli.Thousands(tpl.Stock))

	file := filepath.Join(a.Config.DataDir, fmt.Sprintf("demo-users-%d.xlsx", n))
	start := time.Now()
	st, err := sheet.GenerateFile(file, sheet.GenOptions{Rows: n, Seed: uint64(time.Now().UnixNano()), DupRate: 0.01, InvalidRate: 0.005})
	if err != nil {
		return nil, 0, fmt.Errorf("generate users: %w", err)
	}
	size := int64(0)
	if fi, err := os.Stat(file); err == nil {
		size = fi.Size()
	}
	fmt.Fprintf(info, "generated %s: %s rows (%s duplicates, %s invalid), %.1f MB, in %s\n",
		file, cli.Thousands(int64(st.Rows)), cli.Thousands(int64(st.Duplicates)), cli.Thousands(int64(st.Invalid)),
		float64(size)/1e6, time.Since(start).Round(time.Millisecond))
	return a.RunTask(ctx, file, tasks.NewTask{Name: demoTask, TemplateID: tpl.ID, FileName: filepath.Base(file)}, p.Update)
}
