package main

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/quanhq/quan/cmd/quan/internal/app"
	"github.com/quanhq/quan/cmd/quan/internal/cli"
)

// MigrateCommand applies the store's schema migrations, or lists them, as
// a step of its own: a DBA runs `quan migrate up`, then starts the
// processes with --migrate=false.
type MigrateCommand struct {
	Main *Main
}

// Run parses `migrate up|status [flags]` and does it.
func (c *MigrateCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	var cfg app.Config
	fs.StringVar(&cfg.DataDir, "data", "./quan-data", "data folder (the SQLite database)")
	fs.StringVar(&cfg.StoreURL, "store", "sqlite:", "store: sqlite:[PATH] (default PATH: DATA/quan.db) or mysql://USER[:PASS]@HOST[:PORT]/DB")
	fs.StringVar(&cfg.LogLevel, "log-level", "warn", "debug, info, warn or error")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: quan migrate up|status [flags]\n\n  up      apply the pending migrations\n  status  list the migrations, applied and pending\n\n")
		fs.PrintDefaults()
	}
	pos, err := c.Main.parse(fs, args, "up|status")
	if err != nil {
		return err
	}
	var ms []app.Migration
	switch pos[0] {
	case "status":
		if ms, err = app.Migrations(ctx, cfg); err != nil {
			return err
		}
	case "up":
		logger, err := cfg.NewLogger(c.Main.Stderr)
		if err != nil {
			return err
		}
		before, err := app.Migrations(ctx, cfg)
		if err != nil {
			return err
		}
		if ms, err = app.MigrateUp(ctx, cfg, logger); err != nil {
			return err
		}
		n := 0
		for i, m := range ms {
			if i < len(before) && before[i].Pending() && !m.Pending() {
				fmt.Fprintf(c.Main.Stdout, "applied %s\n", m.Name)
				n++
			}
		}
		fmt.Fprintf(c.Main.Stdout, "%d migrations applied; the store %s is up to date\n", n, app.Redact(cfg.StoreURL))
		return nil
	default:
		return cli.Usagef("migrate: unknown action %q: want up or status", pos[0])
	}
	w := tabwriter.NewWriter(c.Main.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "VERSION\tNAME\tAPPLIED")
	pending := 0
	for _, m := range ms {
		at := "pending"
		if !m.Pending() {
			at = m.AppliedAt.Format(time.RFC3339)
		} else {
			pending++
		}
		fmt.Fprintf(w, "%04d\t%s\t%s\n", m.Version, m.Name, at)
	}
	w.Flush()
	fmt.Fprintf(c.Main.Stdout, "%d applied, %d pending\n", len(ms)-pending, pending)
	return nil
}
