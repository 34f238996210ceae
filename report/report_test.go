package report_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/report"
	"github.com/quanhq/quan/sheet"
	"github.com/xuri/excelize/v2"
)

func failures(fs ...quan.Failure) iter.Seq2[quan.Failure, error] {
	return func(yield func(quan.Failure, error) bool) {
		for _, f := range fs {
			if !yield(f, nil) {
				return
			}
		}
	}
}

// TestReportReadsBackAsADistributionFile writes a report and reads it as
// a distribution file: the user column is found, the ids come back as
// written, and an inexact number is inexact again rather than the id of
// whoever holds its rounded digits.
func TestReportReadsBackAsADistributionFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reports", "task-1-failures.xlsx")
	err := report.Failures{}.Write(context.Background(), path, &quan.Task{ID: 1}, failures(
		quan.Failure{Line: 3, Raw: "abc", Cause: quan.CauseInvalidID},
		quan.Failure{Line: 4, Raw: "1234567890123456789", Cause: quan.CauseOutOfStock},
		quan.Failure{Line: 6, Raw: "1234567890123456800", Cause: quan.CauseInexactNumber},
		quan.Failure{Line: 7, Raw: "1.2345678901234568E+18", Cause: quan.CauseInexactNumber},
		quan.Failure{Line: 9, Raw: " 0042 ", Cause: quan.CauseLimitReached},
	))
	if err != nil {
		t.Fatal(err)
	}

	f, err := excelize.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := f.GetRows(f.GetSheetList()[0])
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"行号 Row", "用户ID User ID", "原因 Reason", "代码 Code", "说明 Details"}
	if len(rows) != 6 || len(rows[0]) != len(want) {
		t.Fatalf("report rows %q", rows)
	}
	for i, h := range want {
		if rows[0][i] != h {
			t.Errorf("header %d = %q, want %q", i, rows[0][i], h)
		}
	}
	if r := rows[2]; r[0] != "4" || r[1] != "1234567890123456789" || r[2] != "库存不足 out of stock" || r[3] != "out_of_stock" ||
		r[4] != "库存不足：模板已没有剩余的券。 Out of stock: the template had no coupons left." {
		t.Errorf("out of stock row %q", r)
	}

	r, err := sheet.Open(path, sheet.Options{})
	if err != nil {
		t.Fatalf("the report is not a distribution file: %v", err)
	}
	defer r.Close()
	var got []string
	for {
		row, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		s := row.UserID
		if errors.Is(row.Err, sheet.ErrInexactNumber) {
			s += " (inexact)"
		}
		got = append(got, s)
	}
	wantIDs := []string{"abc", "1234567890123456789", "1234567890123456800 (inexact)", "1234567890123456800 (inexact)", " 0042 "}
	if len(got) != len(wantIDs) {
		t.Fatalf("read back %q, want %q", got, wantIDs)
	}
	for i := range wantIDs {
		if got[i] != wantIDs[i] {
			t.Errorf("row %d read back %q, want %q", i+2, got[i], wantIDs[i])
		}
	}
}

// TestEveryCauseHasALabel checks that the report's Reason column names
// every cause in Chinese and English, not by its code.
func TestEveryCauseHasALabel(t *testing.T) {
	for _, c := range []quan.Cause{quan.CauseInvalidID, quan.CauseInexactNumber, quan.CauseDuplicate,
		quan.CauseLimitReached, quan.CauseOutOfStock, quan.CauseTemplateInactive} {
		l := c.Label()
		ascii, other := 0, 0
		for _, r := range l {
			if r < 0x80 {
				ascii++
			} else {
				other++
			}
		}
		if l == string(c) || other < 2 || ascii < 5 {
			t.Errorf("cause %s: label %q is not Chinese and English", c, l)
		}
	}
}

// TestReportOnAFullDisk: a report the disk has no room for is
// quan.ENOSPACE, saying how many bytes are free, with ENOSPC in the chain;
// any other error stays as it is.
func TestReportOnAFullDisk(t *testing.T) {
	dir := t.TempDir()
	full := fmt.Errorf("report: save: %w", &os.PathError{Op: "write", Path: dir + "/x.partial", Err: syscall.ENOSPC})
	err := report.NoSpace(filepath.Join(dir, "task-1-failures.xlsx"), full)
	if quan.ErrorCode(err) != quan.ENOSPACE || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("%v: code %q", err, quan.ErrorCode(err))
	}
	if msg := quan.ErrorMessage(err); !strings.Contains(msg, "failure report") || !strings.Contains(msg, "bytes are free") {
		t.Errorf("message %q", msg)
	}
	other := errors.New("report: bad sheet")
	if got := report.NoSpace(dir, other); got != other {
		t.Errorf("another error became %v", got)
	}
}
