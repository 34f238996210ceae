package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/quanhq/quan/cmd/quan/internal/cli"
	"github.com/quanhq/quan/sheet"
)

// GenUsersCommand writes a file of fake target users for trying quan.
type GenUsersCommand struct {
	Main *Main
}

// Run parses args and writes the file.
func (c *GenUsersCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("gen-users", flag.ContinueOnError)
	n := fs.Int("n", 1000, "data rows")
	out := fs.String("o", "users.xlsx", "output file: .xlsx or .csv")
	shared := fs.Bool("shared", false, "xlsx: shared strings, as Excel writes, instead of inline strings")
	gbk := fs.Bool("gbk", false, "csv: GBK encoding with a Chinese header, as Excel on Chinese Windows writes")
	chinese := fs.Bool("chinese-header", false, "header 用户ID, 手机号, 邮箱 instead of userId, phone, mail")
	dup := fs.Float64("dup", 0, "share of rows repeating an earlier user (0..1)")
	invalid := fs.Float64("invalid", 0, "share of rows with an invalid user id (0..1)")
	seed := fs.Uint64("seed", 1, "random seed: the same seed writes the same file")
	if _, err := c.Main.parse(fs, args); err != nil {
		return err
	}
	opt := sheet.GenOptions{Rows: *n, Seed: *seed, DupRate: *dup, InvalidRate: *invalid, ChineseHeader: *chinese}
	switch ext := strings.ToLower(filepath.Ext(*out)); {
	case ext == ".csv" && *gbk:
		opt.Format = sheet.GenCSVGBK
	case ext == ".csv":
		opt.Format = sheet.GenCSV
	case ext == ".xlsx" && *shared:
		opt.Format = sheet.GenXLSXShared
	case ext == ".xlsx":
		opt.Format = sheet.GenXLSXInline
	default:
		return cli.Usagef("gen-users: -o %q: the file name must end in .xlsx or .csv", *out)
	}
	if *n < 0 || *dup < 0 || *dup >= 1 || *invalid < 0 || *invalid >= 1 || *dup+*invalid >= 1 {
		return cli.Usagef("gen-users: -n must be ≥ 0 and -dup, -invalid shares in [0, 1) summing below 1")
	}
	start := time.Now()
	st, err := sheet.GenerateFile(*out, opt)
	if err != nil {
		return fmt.Errorf("gen-users: %w", err)
	}
	fmt.Fprintf(c.Main.Stdout, "wrote %s: %d rows (%d unique users, %d duplicates, %d invalid) in %s\n",
		*out, st.Rows, st.Unique, st.Duplicates, st.Invalid, time.Since(start).Round(time.Millisecond))
	return nil
}
