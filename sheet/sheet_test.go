package sheet

import (
	"errors"
	"io"
	"path/filepath"
	"slices"
	"testing"
)

func TestNextAndProgress(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "u.xlsx")
	if _, err := GenerateFile(path, GenOptions{Format: GenXLSXShared, Rows: 30000, Seed: 9}); err != nil {
		t.Fatal(err)
	}
	r, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var last, n int64
	for {
		row, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		if row.Line != n+1 || len(row.UserID) != 19 {
			t.Fatalf("row %d: %+v", n, row)
		}
		read, total := r.Progress()
		if read < last || read > total || total <= 0 {
			t.Fatalf("Progress = %d, %d after %d", read, total, last)
		}
		last = read
	}
	if read, total := r.Progress(); n != 30000 || read != total {
		t.Errorf("rows %d, progress %d/%d", n, read, total)
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("Next after EOF: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestOpenMissingFile(t *testing.T) {
	t.Parallel()
	if _, err := Open(filepath.Join(t.TempDir(), "nope.xlsx"), Options{}); err == nil {
		t.Fatal("no error")
	}
}

// TestCloseEarly closes a Reader in the middle of a large file: the
// inflating goroutine must stop (the race detector and goroutine leak
// would show otherwise).
func TestCloseEarly(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "u.xlsx")
	if _, err := GenerateFile(path, GenOptions{Rows: 50000, Seed: 2}); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		r, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Read(make([]Row, 10)); err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
}

// TestBlankBefore: each row says how many blank rows lie between it and
// the row before, or the header — in an .xlsx empty row elements and
// rows left out alike, in a CSV blank lines — and blank rows before the
// header or after the last data row count nowhere.
func TestBlankBefore(t *testing.T) {
	t.Parallel()
	xlsx := oneSheet(t, `<row r="1"/>`+ // before the header: not counted
		`<row r="2">`+is("A2", "userId")+`</row>`+
		`<row r="3"/>`+ // an empty row element
		`<row r="4">`+is("A4", "1")+`</row>`+
		`<row r="5">`+is("A5", "2")+`</row>`+
		`<row r="6"><c r="A6" t="inlineStr"><is><t> </t></is></c></row>`+ // a blank cell
		`<row r="9">`+is("A9", "3")+`</row>`+ // rows 7 and 8 left out
		`<row r="10"/><row r="11"/>`) // after the last: not counted
	csv := "\n\nuserId\n\n1\n2\n ,\n\n\n3\n\n\n"
	for _, tc := range []struct {
		name string
		data []byte
		want []int64 // BlankBefore of rows 1, 2, 3
	}{
		{"users.xlsx", xlsx, []int64{1, 0, 3}},
		{"users.csv", []byte(csv), []int64{1, 0, 3}},
	} {
		rows, err := readAll(t, tc.data, tc.name, Options{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []int64
		for _, r := range rows {
			got = append(got, r.BlankBefore)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: blank before each row %v, want %v (%s)", tc.name, got, tc.want, rowsString(rows))
		}
	}
}
