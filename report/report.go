// Package report writes a distribution task's failed rows as an .xlsx
// workbook with excelize.
package report

import (
	"context"
	"fmt"
	"iter"
	"os"
	"path/filepath"

	"github.com/quanhq/quan"
	"github.com/xuri/excelize/v2"
)

// Failures writes failure reports: one sheet with the row number, the user
// id as written and the cause in words, in file order.
type Failures struct{}

var _ quan.FailureReport = Failures{}

// Header is the first row of a report.
var Header = []any{"行号 Row", "用户ID User ID", "原因 Cause", "代码 Code"}

// Write streams rows into a new workbook at path, replacing any earlier
// report atomically.
func (Failures) Write(ctx context.Context, path string, t *quan.Task, rows iter.Seq2[quan.Failure, error]) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create report folder: %w", err)
	}
	f := excelize.NewFile()
	defer f.Close()
	const sheet = "Failures"
	if err := f.SetSheetName("Sheet1", sheet); err != nil {
		return err
	}
	sw, err := f.NewStreamWriter(sheet)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := sw.SetColWidth(2, 2, 24); err != nil {
		return err
	}
	if err := sw.SetColWidth(3, 3, 80); err != nil {
		return err
	}
	if err := sw.SetRow("A1", Header); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	n := 2
	for fl, err := range rows {
		if err != nil {
			return fmt.Errorf("report: read failures: %w", err)
		}
		if n%10000 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		cell, _ := excelize.CoordinatesToCellName(1, n)
		// The user id stays text, exactly as the merchant wrote it.
		if err := sw.SetRow(cell, []any{fl.Line, fl.Raw, fl.Cause.Describe(), string(fl.Cause)}); err != nil {
			return fmt.Errorf("report: %w", err)
		}
		n++
	}
	if err := sw.Flush(); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	out, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.partial")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	defer os.Remove(out.Name()) // a no-op once renamed
	if _, err := f.WriteTo(out); err != nil {
		out.Close()
		return fmt.Errorf("report: save: %w", err)
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
