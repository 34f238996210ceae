package sheet_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/quanhq/quan/sheet"
)

// Read a file in chunks of 5,000 rows, reporting progress as it goes.
func Example() {
	dir, _ := os.MkdirTemp("", "sheet-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "users.xlsx")
	if _, err := sheet.GenerateFile(path, sheet.GenOptions{Rows: 12_000, Seed: 1}); err != nil {
		fmt.Println(err)
		return
	}

	r, err := sheet.Open(path, sheet.Options{})
	if err != nil {
		fmt.Println(err) // e.g. "open xlsx: row 1: no user id column: ..."
		return
	}
	defer r.Close()
	rows := make([]sheet.Row, 5000)
	total := 0
	for {
		n, err := r.Read(rows)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, row := range rows[:n] {
			if row.Err != nil { // e.g. a 19-digit id typed into a numeric cell
				fmt.Printf("row %d: %v\n", row.Line, row.Err)
			}
		}
		total += n
		read, size := r.Progress() // for a progress bar
		_ = 100 * float64(read) / float64(size)
	}
	read, size := r.Progress()
	fmt.Printf("%d rows, %.0f%% read\n", total, 100*float64(read)/float64(size))
	// Output:
	// 12000 rows, 100% read
}
