// Package report writes a distribution task's failed rows as an .xlsx
// workbook with excelize.
package report

import (
	"context"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/diskfree"
	"github.com/xuri/excelize/v2"
)

// Failures writes failure reports: one sheet headed by
// quan.FailureColumns, a row a failed row of the file, in file order.
type Failures struct{}

var _ quan.FailureReport = Failures{}

// Write streams rows into a new workbook at path, replacing any earlier
// report atomically: a report cut short leaves nothing behind. A full
// disk is quan.ENOSPACE, saying how many bytes are free.
func (Failures) Write(ctx context.Context, path string, t *quan.Task, rows iter.Seq2[quan.Failure, error]) (err error) {
	defer func() { err = noSpace(path, err) }()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create report folder: %w", err)
	}
	out, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.partial")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	defer os.Remove(out.Name()) // a no-op once renamed
	cells := func(yield func([]any, error) bool) {
		for fl, err := range rows {
			if err != nil {
				yield(nil, fmt.Errorf("read failures: %w", err))
				return
			}
			if !yield([]any{fl.Line, userCell(fl), fl.Cause.Label(), string(fl.Cause), fl.Cause.Describe()}, nil) {
				return
			}
		}
	}
	if err := writeSheet(ctx, out, "Failures", []float64{0, 24, 36, 18, 80}, quan.FailureColumns(), cells); err != nil {
		out.Close()
		return fmt.Errorf("report: %w", err)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return fmt.Errorf("report: save: %w", err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("report: save: %w", err)
	}
	if err := os.Rename(out.Name(), path); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// noSpace is err, of writing the report at path, as quan.ENOSPACE when
// the disk is full, saying how many bytes are free.
func noSpace(path string, err error) error {
	if err == nil || !diskfree.Full(err) {
		return err
	}
	return quan.NoSpace("the failure report", 0, diskfree.Free(filepath.Dir(path)), err)
}

// userCell is the user id of a failed row as the report holds it: text,
// exactly as the merchant wrote it, except for an inexact number, which
// stays a number. Its digits are the rounded ones Excel kept, a real
// user's perhaps: as text, a report uploaded again would issue to that
// user; as a number, the row fails as inexact again until someone types
// the right id.
func userCell(f quan.Failure) any {
	if f.Cause == quan.CauseInexactNumber {
		if v, err := strconv.ParseFloat(strings.TrimSpace(f.Raw), 64); err == nil {
			return v
		}
	}
	return f.Raw
}

// writeSheet streams rows into a workbook of one sheet named name, headed
// by header, and writes it to w. widths[i] is the width of column i+1, 0
// the default. It returns the first error of rows, or ctx's when ctx
// ends.
func writeSheet(ctx context.Context, w io.Writer, name string, widths []float64, header []string, rows iter.Seq2[[]any, error]) error {
	f := excelize.NewFile()
	defer f.Close()
	if err := f.SetSheetName("Sheet1", name); err != nil {
		return err
	}
	sw, err := f.NewStreamWriter(name)
	if err != nil {
		return err
	}
	for i, wd := range widths {
		if wd > 0 {
			if err := sw.SetColWidth(i+1, i+1, wd); err != nil {
				return err
			}
		}
	}
	head := make([]any, len(header))
	for i, h := range header {
		head[i] = h
	}
	if err := sw.SetRow("A1", head); err != nil {
		return err
	}
	n := 2
	for row, err := range rows {
		if err != nil {
			return err
		}
		if n%10000 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		cell, _ := excelize.CoordinatesToCellName(1, n)
		if err := sw.SetRow(cell, row); err != nil {
			return err
		}
		n++
	}
	if err := sw.Flush(); err != nil {
		return err
	}
	if _, err := f.WriteTo(w); err != nil {
		return fmt.Errorf("save: %w", err)
	}
	return nil
}
