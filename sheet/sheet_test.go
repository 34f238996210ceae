package sheet

import (
	"errors"
	"io"
	"path/filepath"
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
