package sheet

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzReader feeds arbitrary bytes to the reader as a whole file, as the
// worksheet XML of a valid workbook, as its shared strings, and as CSV.
// The reader must never panic or hang; errors are fine.
func FuzzReader(f *testing.F) {
	f.Add(uint8(0), oneSheet(f, hdr+`<row r="2">`+is("A2", "1")+`</row>`))
	f.Add(uint8(0), []byte("userId,phone\n1,2\n"))
	f.Add(uint8(1), []byte(`<worksheet><sheetData>`+hdr+`<row r="2"><c r="A2"><v>1E3</v></c><c r="B2" t="s"><v>1</v></c>`+
		`<c r="C2" t="inlineStr"><is><r><t>a&amp;</t></r><rPh><t>x</t></rPh></is></c></row><row r="5"/></sheetData></worksheet>`))
	f.Add(uint8(1), []byte(`<x:worksheet><x:sheetData><x:row><x:c t="inlineStr"><x:is><x:t><![CDATA[userId]]></x:t></x:is></x:c></x:row>`+
		`<x:row r="3"><x:c><x:v>1.2345678901234568E+18</x:v></x:c></x:row></x:sheetData></x:worksheet>`))
	f.Add(uint8(2), []byte("\xef\xbb\xbfuserId,mail\r\n\"1\r\n\",\"a\"\"b\"\r\n\r\n2,x"))
	f.Add(uint8(2), []byte("\xd3\xc3\xbb\xa7ID,\xca\xd6\xbb\xfa\xba\xc5\n1,138\n"))
	f.Add(uint8(3), []byte(`<sst><si><t>userId</t></si><si><r><t>1</t></r><r><t>2</t></r></si><si/><si><t>&#x41;</t></si></sst>`))
	f.Fuzz(func(t *testing.T, mode uint8, data []byte) {
		var file []byte
		name := "f.xlsx"
		switch mode % 4 {
		case 0:
			file = data
		case 1:
			file = buildXLSX(t, testBook{store: true, sheets: []testSheet{{name: "S", raw: string(data)}},
				sst: `<si><t>userId</t></si><si><t>x</t></si>`})
		case 2:
			file, name = data, "f.csv"
		case 3:
			file = buildXLSX(t, testBook{store: true, rawSST: string(data), sheets: []testSheet{{name: "S", data: `<row><c t="s"><v>0</v></c></row>` +
				`<row><c t="s"><v>1</v></c><c t="s"><v>2</v></c><c t="s"><v>3</v></c></row>`}}})
		}
		r, err := New(bytes.NewReader(file), int64(len(file)), name, Options{MaxRows: 1 << 16, MaxUncompressed: 64 << 20})
		if err != nil {
			return
		}
		defer r.Close()
		buf := make([]Row, 7)
		for {
			n, err := r.Read(buf)
			if err != nil {
				if !errors.Is(err, io.EOF) && err.Error() == "" {
					t.Fatal("empty error message")
				}
				return
			}
			if n <= 0 || n > len(buf) {
				t.Fatalf("Read returned %d rows and no error", n)
			}
			for _, row := range buf[:n] {
				if row.Line <= 0 {
					t.Fatalf("row %+v has no line number", row)
				}
			}
		}
	})
}
