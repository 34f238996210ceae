// Package report writes a distribution task's failed rows as an .xlsx
// workbook with excelize.
package report

import (
	"context"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/quanhq/quan"
	"github.com/xuri/excelize/v2"
)

// Failures writes failure reports: one sheet headed by
// quan.FailureColumns, a row a failed row of the file, in file order.
type Failures struct{}

var _ quan.FailureReport = Failures{}

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
	if err := sw.SetColWidth(3, 3, 36); err != nil {
		return err
	}
	if err := sw.SetColWidth(4, 4, 18); err != nil {
		return err
	}
	if err := sw.SetColWidth(5, 5, 80); err != nil {
		return err
	}
	var header []any
	for _, h := range quan.FailureColumns() {
		header = append(header, h)
	}
	if err := sw.SetRow("A1", header); err != nil {
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
		row := []any{fl.Line, userCell(fl), fl.Cause.Label(), string(fl.Cause), fl.Cause.Describe()}
		if err := sw.SetRow(cell, row); err != nil {
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
