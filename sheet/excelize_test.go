package sheet

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"
)

func TestExcelizeWritten(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	t.Run("OKNormalAPI", func(t *testing.T) {
		t.Parallel()
		f := excelize.NewFile()
		defer f.Close()
		idx, _ := f.NewSheet("Users")
		f.SetActiveSheet(idx)
		set := func(cell string, v any) {
			if err := f.SetCellValue("Users", cell, v); err != nil {
				t.Fatal(err)
			}
		}
		set("B1", "Email")
		set("A1", "userId")
		set("C1", "手机号")
		set("A2", "1234567890123456789")
		set("C2", 13800000000)
		set("B2", "a&b@<x>.com")
		set("A3", 1000000000)
		set("C3", int64(13912345678))
		set("A5", int64(1234567890123456789)) // a numeric cell with all 19 digits: exact
		set("A6", 12.5)
		set("A7", 1e9)
		set("A8", float64(1<<53))
		style, _ := f.NewStyle(&excelize.Style{Fill: excelize.Fill{Type: "pattern", Color: []string{"FF0000"}, Pattern: 1}})
		f.SetCellStyle("Users", "A9", "C9", style)
		f.SetCellRichText("Users", "A10", []excelize.RichTextRun{{Text: "12"}, {Text: "34", Font: &excelize.Font{Bold: true}}})
		path := filepath.Join(dir, "normal.xlsx")
		if err := f.SaveAs(path); err != nil {
			t.Fatal(err)
		}
		// Sheet1 comes first in workbook order; it is empty.
		if _, err := readFile(t, path, Options{}); !errors.Is(err, ErrNoHeader) {
			t.Fatalf("first sheet: err = %v, want ErrNoHeader", err)
		}
		rows, err := readFile(t, path, Options{Sheet: "Users"})
		if err != nil {
			t.Fatal(err)
		}
		want := "2|1234567890123456789|13800000000|a&b@<x>.com\n3|1000000000|13912345678|\n" +
			"5|1234567890123456789||\n6|12.5||\n7|1000000000||\n8|9007199254740992||\n10|1234||\n"
		if got := rowsString(rows); got != want {
			t.Errorf("got\n%s\nwant\n%s", got, want)
		}
	})

	t.Run("OKStreamWriter", func(t *testing.T) {
		t.Parallel()
		f := excelize.NewFile()
		defer f.Close()
		sw, err := f.NewStreamWriter("Sheet1")
		if err != nil {
			t.Fatal(err)
		}
		rows := [][]any{
			{"用户ID", "手机号", "邮箱", "备注", "语言"},
			{"1234567890123456789", "13800000000", "x@y.cn", "第一", "en"},
			{int64(42), 13900000000, nil, "数字"},
		}
		for i, r := range rows {
			cell, _ := excelize.CoordinatesToCellName(1, i+1)
			if err := sw.SetRow(cell, r); err != nil {
				t.Fatal(err)
			}
		}
		sw.SetRow("A7", []any{excelize.Cell{Value: "7"}, nil, excelize.Cell{Value: "m7"}})
		if err := sw.Flush(); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "stream.xlsx")
		if err := f.SaveAs(path); err != nil {
			t.Fatal(err)
		}
		got, err := readFile(t, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := "2|1234567890123456789|13800000000|x@y.cn|lang=en\n3|42|13900000000|\n7|7||m7\n"
		if s := rowsString(got); s != want {
			t.Errorf("got\n%s\nwant\n%s", s, want)
		}
	})
}

func readFile(t testing.TB, path string, opt Options) ([]Row, error) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return readAll(t, data, path, opt)
}

// bigRows is the size of the large generated files: 200k by default,
// 1M with QUAN_SHEET_BIG=1, 20k under the race detector.
func bigRows() int {
	switch {
	case os.Getenv("QUAN_SHEET_BIG") == "1":
		return 1_000_000
	case raceEnabled:
		return 20_000
	}
	return 200_000
}

// rowHash feeds one row into h.
func rowHash(h hash.Hash, line int64, fields ...string) {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(line))
	h.Write(n[:])
	for _, f := range fields {
		binary.LittleEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		io.WriteString(h, f)
	}
}

// TestDifferentialExcelize compares every field and row number of large
// generated files, with duplicates, invalid rows and an ignored column,
// between this reader and excelize's Rows.
func TestDifferentialExcelize(t *testing.T) {
	t.Parallel()
	for _, format := range []GenFormat{GenXLSXInline, GenXLSXShared} {
		t.Run(fmt.Sprint("format", format), func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "users.xlsx")
			opt := GenOptions{Format: format, Rows: bigRows(), Seed: uint64(7 + format), DupRate: 0.03, InvalidRate: 0.02,
				Names: true, ChineseHeader: format == GenXLSXShared}
			st, err := GenerateFile(path, opt)
			if err != nil {
				t.Fatal(err)
			}
			mine, n, counts := hashMine(t, path)
			theirs, m := hashExcelize(t, path)
			if n != opt.Rows || m != opt.Rows {
				t.Errorf("rows: mine %d, excelize %d, want %d", n, m, opt.Rows)
			}
			if mine != theirs {
				t.Errorf("checksums differ: mine %x, excelize %x", mine, theirs)
			}
			if counts != st {
				t.Errorf("counted %+v, generator says %+v", counts, st)
			}
		})
	}
}

func hashMine(t *testing.T, path string) (sum [32]byte, n int, st GenStats) {
	r, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h := sha256.New()
	seen := make(map[string]bool)
	buf := make([]Row, 5000)
	for {
		k, err := r.Read(buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range buf[:k] {
			rowHash(h, row.Line, row.UserID, row.Phone, row.Mail, row.Lang)
			st.Rows++
			switch {
			case len(row.UserID) != 19 || strings.Trim(row.UserID, "0123456789") != "":
				st.Invalid++
			case seen[row.UserID]:
				st.Duplicates++
			default:
				seen[row.UserID] = true
				st.Unique++
			}
		}
	}
	return [32]byte(h.Sum(nil)), st.Rows, st
}

func hashExcelize(t *testing.T, path string) (sum [32]byte, n int) {
	f, err := excelize.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := f.Rows(f.GetSheetList()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	h := sha256.New()
	var cols [nFields]int
	line := int64(0)
	header := false
	for rows.Next() {
		line++
		cells, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(strings.Join(cells, "")) == "" {
			continue
		}
		if !header {
			var err error
			if cols, _, err = matchHeader(cells); err != nil {
				t.Fatal(err)
			}
			header = true
			continue
		}
		var v [nFields]string
		for f, c := range cols {
			if c >= 0 && c < len(cells) {
				v[f] = cells[c]
			}
		}
		rowHash(h, line, v[:]...)
		n++
	}
	return [32]byte(h.Sum(nil)), n
}

// TestGenerateCSV reads generated CSV in both encodings back and checks
// they hold the same rows as the xlsx of the same seed.
func TestGenerateCSV(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var sums [3][32]byte
	for i, format := range []GenFormat{GenXLSXInline, GenCSV, GenCSVGBK} {
		path := filepath.Join(dir, fmt.Sprint("u", i))
		if _, err := GenerateFile(path, GenOptions{Format: format, Rows: 20000, Seed: 5, DupRate: 0.1, InvalidRate: 0.1, Names: true}); err != nil {
			t.Fatal(err)
		}
		sums[i], _, _ = hashMine(t, path)
	}
	if sums[0] != sums[1] || sums[1] != sums[2] {
		t.Errorf("xlsx, csv and gbk csv differ: %x %x %x", sums[0][:4], sums[1][:4], sums[2][:4])
	}
}

func TestGenerateDeterministic(t *testing.T) {
	t.Parallel()
	gen := func(seed uint64) string {
		var b strings.Builder
		if _, err := Generate(&b, GenOptions{Format: GenCSV, Rows: 1000, Seed: seed, DupRate: 0.2, InvalidRate: 0.2}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	if gen(1) != gen(1) {
		t.Error("same seed, different output")
	}
	if gen(1) == gen(2) {
		t.Error("different seeds, same output")
	}
	lines := strings.Split(gen(3), "\r\n")
	for _, l := range lines[1:] {
		if l == "" {
			continue
		}
		f := strings.Split(l, ",")
		if len(f[1]) != 11 || f[1][0] != '1' || f[1][1] < '3' || !strings.Contains(f[2], "@") {
			t.Fatalf("bad row %q", l)
		}
	}
}
