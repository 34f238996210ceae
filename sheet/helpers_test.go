package sheet

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// testBook describes an xlsx built by buildXLSX.
type testBook struct {
	sheets []testSheet // in workbook order
	sst    string      // sharedStrings.xml body (inside <sst>), "" for none
	rawSST string      // full sharedStrings.xml, overrides sst
	store  bool        // store parts uncompressed (fast to build, for fuzzing)
}

type testSheet struct {
	name string
	part string // e.g. "worksheets/sheet2.xml"; "" means sheetN.xml by position
	data string // sheetData content
	raw  string // full worksheet XML, overrides data
}

const testNS = `xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" ` +
	`xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"`

// buildXLSX returns a minimal workbook.
func buildXLSX(t testing.TB, b testBook) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	method := zip.Deflate
	if b.store {
		method = zip.Store
	}
	add := func(name, body string) {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, body)
	}
	add("[Content_Types].xml", `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`)
	add("_rels/.rels", `<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">`+
		`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>`)
	var wb, rels strings.Builder
	wb.WriteString(`<?xml version="1.0" encoding="UTF-8"?><workbook ` + testNS + `><sheets>`)
	rels.WriteString(`<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">`)
	for i, s := range b.sheets {
		part := s.part
		if part == "" {
			part = fmt.Sprintf("worksheets/sheet%d.xml", i+1)
		}
		fmt.Fprintf(&wb, `<sheet name="%s" sheetId="%d" r:id="rId%d"/>`, xmlEscape(s.name), i+1, i+10)
		fmt.Fprintf(&rels, `<Relationship Id="rId%d" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="%s"/>`, i+10, part)
		body := s.raw
		if body == "" {
			body = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` + "\n<worksheet " + testNS + `><sheetData>` + s.data + `</sheetData></worksheet>`
		}
		add("xl/"+part, body)
	}
	wb.WriteString(`</sheets></workbook>`)
	if b.sst != "" || b.rawSST != "" {
		rels.WriteString(`<Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/>`)
		body := b.rawSST
		if body == "" {
			body = `<?xml version="1.0"?><sst ` + testNS + `>` + b.sst + `</sst>`
		}
		add("xl/sharedStrings.xml", body)
	}
	rels.WriteString(`</Relationships>`)
	add("xl/workbook.xml", wb.String())
	add("xl/_rels/workbook.xml.rels", rels.String())
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// oneSheet is buildXLSX for a single sheet named Sheet1.
func oneSheet(t testing.TB, data string) []byte {
	t.Helper()
	return buildXLSX(t, testBook{sheets: []testSheet{{name: "Sheet1", data: data}}})
}

// is returns an inline string cell.
func is(ref, v string) string {
	return `<c r="` + ref + `" t="inlineStr"><is><t>` + v + `</t></is></c>`
}

// hdr is a header row 1 with userId, phone, mail in A, B, C.
const hdr = `<row r="1">` + `<c r="A1" t="inlineStr"><is><t>userId</t></is></c>` +
	`<c r="B1" t="inlineStr"><is><t>phone</t></is></c>` + `<c r="C1" t="inlineStr"><is><t>mail</t></is></c></row>`

// readAll reads every row of data with the given name.
func readAll(t testing.TB, data []byte, name string, opt Options) ([]Row, error) {
	t.Helper()
	r, err := New(bytes.NewReader(data), int64(len(data)), name, opt)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []Row
	buf := make([]Row, 3) // small on purpose: exercises batch boundaries
	for {
		n, err := r.Read(buf)
		if err == io.EOF {
			if read, total := r.Progress(); read != total {
				t.Errorf("Progress at EOF = %d, %d", read, total)
			}
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if n == 0 {
			t.Fatal("Read returned 0 rows and no error")
		}
		out = append(out, buf[:n]...)
	}
}

// rowsString renders rows compactly for comparison.
func rowsString(rows []Row) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%d|%s|%s|%s", r.Line, r.UserID, r.Phone, r.Mail)
		if r.Lang != "" {
			b.WriteString("|lang=" + r.Lang)
		}
		if r.Err != nil {
			b.WriteString("|ERR")
			if errors.Is(r.Err, ErrInexactNumber) {
				b.WriteString(":inexact")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
