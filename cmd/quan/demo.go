package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/quanhq/quan/cmd/quan/internal/app"
	"github.com/quanhq/quan/cmd/quan/internal/cli"
	"github.com/quanhq/quan/sheet"
	"github.com/quanhq/quan/tasks"
)

// DemoCommand shows quan's main job end to end: a template, a generated
// file of users, and its distribution with a progress bar.
type DemoCommand struct {
	Main *Main
}

// Run parses args and runs the demo.
func (c *DemoCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	var cfg app.Config
	cfg.Register(fs, app.Local)
	n := fs.Int("n", 1_000_000, "target users in the generated file")
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

	// 1% duplicate and 0.5% invalid rows, and stock for 98% of the rows,
	// so the summary shows each way a row can fail.
	stock := max(1, int64(*n)-int64(*n)/50)
	tpl, err := a.CreateDemoTemplate(ctx, stock)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	fmt.Fprintf(info, "template %d: %s, stock %s, one per user\n", tpl.ID, tpl.Name, cli.Thousands(tpl.Stock))

	file := filepath.Join(a.Config.DataDir, fmt.Sprintf("demo-users-%d.xlsx", *n))
	start := time.Now()
	st, err := sheet.GenerateFile(file, sheet.GenOptions{Rows: *n, Seed: uint64(time.Now().UnixNano()), DupRate: 0.01, InvalidRate: 0.005})
	if err != nil {
		return fmt.Errorf("demo: generate users: %w", err)
	}
	size := int64(0)
	if fi, err := os.Stat(file); err == nil {
		size = fi.Size()
	}
	fmt.Fprintf(info, "generated %s: %s rows (%s duplicates, %s invalid), %.1f MB, in %s\n",
		file, cli.Thousands(int64(st.Rows)), cli.Thousands(int64(st.Duplicates)), cli.Thousands(int64(st.Invalid)),
		float64(size)/1e6, time.Since(start).Round(time.Millisecond))

	p := out.progress(c.Main.Stderr)
	t, wall, err := a.RunTask(ctx, file, tasks.NewTask{Name: "demo", TemplateID: tpl.ID, FileName: filepath.Base(file)}, p.Update)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	p.Done(t, wall)
	sum := cli.Summary{Task: t, Wall: wall, Report: t.ReportPath, TemplateID: tpl.ID, PeakRSS: cli.PeakRSS()}
	if err := sum.Write(c.Main.Stdout, out.Format); err != nil {
		return err
	}
	return taskExit(t)
}
