package report

import (
	"context"
	"fmt"
	"io"
	"iter"

	"github.com/quanhq/quan"
	"github.com/xuri/excelize/v2"
)

// CodesHeader is the first row of a codes export.
var CodesHeader = []any{"兑换码 Code", "模板 Template", "用户ID Redeemed by", "时间 Redeemed at"}

// Codes writes codes exports: an .xlsx workbook of one sheet, a row a
// code (code, template, and the user and time of its redemption).
type Codes struct{}

var _ quan.CodesExport = Codes{}

// Write streams codes into an .xlsx workbook written to w.
func (Codes) Write(ctx context.Context, w io.Writer, codes iter.Seq2[quan.RedeemCode, error]) error {
	f := excelize.NewFile()
	defer f.Close()
	const sheet = "Codes"
	if err := f.SetSheetName("Sheet1", sheet); err != nil {
		return err
	}
	sw, err := f.NewStreamWriter(sheet)
	if err != nil {
		return fmt.Errorf("codes: %w", err)
	}
	if err := sw.SetColWidth(1, 1, 22); err != nil {
		return err
	}
	if err := sw.SetRow("A1", CodesHeader); err != nil {
		return fmt.Errorf("codes: %w", err)
	}
	n := 2
	for c, err := range codes {
		if err != nil {
			return fmt.Errorf("codes: %w", err)
		}
		if n%10000 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		row := []any{c.Code, c.TemplateID, "", ""}
		if c.UserID != 0 {
			row[2], row[3] = fmt.Sprint(c.UserID), c.RedeemedAt.Format("2006-01-02 15:04:05")
		}
		cell, _ := excelize.CoordinatesToCellName(1, n)
		if err := sw.SetRow(cell, row); err != nil {
			return fmt.Errorf("codes: %w", err)
		}
		n++
	}
	if err := sw.Flush(); err != nil {
		return fmt.Errorf("codes: %w", err)
	}
	if _, err := f.WriteTo(w); err != nil {
		return fmt.Errorf("codes: %w", err)
	}
	return nil
}
