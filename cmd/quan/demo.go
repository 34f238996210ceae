package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/sheet"
)

// DemoCommand shows quan's main job end to end: a template, a generated
// file of users, and its distribution with a progress bar.
type DemoCommand struct {
	Main *Main
}

// Run parses args and runs the demo.
func (c *DemoCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	local := localFlags{}
	local.register(fs)
	n := fs.Int("n", 1_000_000, "target users in the generated file")
	if err := c.Main.parseFlags(fs, args); err != nil {
		return err
	}
	if *n < 1 {
		return fmt.Errorf("demo: -n must be at least 1")
	}
	a, closeStore, err := local.open(ctx, c.Main)
	if err != nil {
		return err
	}
	defer closeStore()
	out := c.Main.Stdout

	// 1% duplicate and 0.5% invalid rows, and stock for 98% of the rows,
	// so the summary shows each way a row can fail.
	stock := max(1, int64(*n)-int64(*n)/50)
	tpl, err := createDemoTemplate(ctx, c.Main, a, stock)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "template %d: %s, stock %s, one per user\n", tpl.ID, tpl.Name, thousands(tpl.Stock))

	file := filepath.Join(local.DataDir, fmt.Sprintf("demo-users-%d.xlsx", *n))
	start := time.Now()
	st, err := sheet.GenerateFile(file, sheet.GenOptions{Rows: *n, Seed: uint64(time.Now().UnixNano()), DupRate: 0.01, InvalidRate: 0.005})
	if err != nil {
		return fmt.Errorf("demo: generate users: %w", err)
	}
	info, _ := os.Stat(file)
	fmt.Fprintf(out, "generated %s: %s rows (%s duplicates, %s invalid), %.1f MB, in %s\n",
		file, thousands(int64(st.Rows)), thousands(int64(st.Duplicates)), thousands(int64(st.Invalid)),
		float64(info.Size())/1e6, time.Since(start).Round(time.Millisecond))

	t, wall, err := runLocalTask(ctx, c.Main, a, file, quan.NewTask{Name: "demo", TemplateID: tpl.ID, FileName: filepath.Base(file)})
	if err != nil {
		return err
	}
	printSummary(out, t, wall, t.ReportPath)
	fmt.Fprintf(out, "  peak memory %.0f MB (%d cores)\n", float64(peakRSS())/(1<<20), runtime.NumCPU())
	return taskExit(t)
}

// createDemoTemplate makes an active 满100减10 template for shop 1.
func createDemoTemplate(ctx context.Context, m *Main, a *app, stock int64) (*quan.Template, error) {
	now := time.Now()
	if m.Now != nil {
		now = m.Now()
	}
	tpl, err := a.templates.Create(ctx, cliIdentity, quan.NewTemplate{
		ShopNo: 1,
		Stock:  stock,
		TemplateSpec: quan.TemplateSpec{
			Name:         "满100减10 demo",
			Kind:         quan.KindThreshold,
			Rule:         quan.Rule{Amount: 1000, Threshold: 10000},
			Source:       quan.SourceShop,
			Scope:        quan.Scope{Kind: quan.ScopeAll},
			IssueStart:   now.Add(-time.Hour),
			IssueEnd:     now.Add(30 * 24 * time.Hour),
			Validity:     quan.Validity{Kind: quan.ValidRelative, Hours: 72},
			PerUserLimit: 1,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("demo: create template: %w", err)
	}
	return a.templates.Activate(ctx, cliIdentity, tpl.ID)
}
