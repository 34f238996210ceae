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

func TestXLSXCells(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		book testBook
		want string
	}{
		{
			name: "OKInline",
			book: testBook{sheets: []testSheet{{name: "S", data: hdr +
				`<row r="2">` + is("A2", "1234567890123456789") + is("B2", "13800000000") + is("C2", "a@b.cn") + `</row>`}}},
			want: "2|1234567890123456789|13800000000|a@b.cn\n",
		},
		{
			name: "OKHeaderVariantsAndOrder",
			book: testBook{sheets: []testSheet{{name: "S", data: `<row r="1">` + is("A1", " EMAIL ") + is("B1", "note") +
				is("C1", "User_ID") + is("D1", "手机号") + `</row>` +
				`<row r="2">` + is("A2", "m@x") + is("B2", "ignored") + is("C2", "42") + is("D2", "139") + `</row>`}}},
			want: "2|42|139|m@x\n",
		},
		{
			name: "OKChineseHeaderNoOptionalColumns",
			book: testBook{sheets: []testSheet{{name: "S", data: `<row r="1">` + is("A1", "用户ID") + `</row>` +
				`<row r="2">` + is("A2", "7") + `</row>`}}},
			want: "2|7||\n",
		},
		{
			name: "OKSharedStringsRichText",
			book: testBook{
				sst: `<si><t>userId</t></si><si><t>mail</t></si>` +
					`<si><r><rPr><b/></rPr><t>12</t></r><r><t xml:space="preserve">34</t></r><rPh sb="0" eb="1"><t>ignored</t></rPh></si>` +
					`<si><t>x&amp;y@z</t></si><si/>`,
				sheets: []testSheet{{name: "S", data: `<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c></row>` +
					`<row r="2"><c r="A2" t="s"><v>2</v></c><c r="B2" t="s"><v>3</v></c></row>` +
					`<row r="3"><c r="A3" t="s"><v>2</v></c><c r="B3" t="s"><v>4</v></c></row>`}},
			},
			want: "2|1234||x&y@z\n3|1234||\n",
		},
		{
			name: "OKStrBoolAndFormula",
			book: testBook{sheets: []testSheet{{name: "S", data: hdr +
				`<row r="2"><c r="A2" t="str"><f>A1&amp;"1"</f><v>99</v></c><c r="B2" t="b"><v>1</v></c></row>`}}},
			want: "2|99|1|\n",
		},
		{
			name: "OKNumbers",
			book: testBook{sheets: []testSheet{{name: "S", data: hdr +
				`<row r="2"><c r="A2"><v>1000000000</v></c><c r="B2" t="n"><v>13800000000</v></c></row>` +
				`<row r="3"><c r="A3"><v>1E9</v></c><c r="B3"><v>1.0E+9</v></c><c r="C3"><v>1.5E+3</v></c></row>` +
				`<row r="4"><c r="A4"><v>12.5</v></c><c r="B4"><v>-3</v></c><c r="C4"><v>0</v></c></row>` +
				`<row r="5"><c r="A5"><v>9007199254740992</v></c><c r="B5"><v>9.007199254740992E+15</v></c></row>` +
				`<row r="6"><c r="A6"><v>1.2345678901234568E+18</v></c></row>` +
				`<row r="7"><c r="A7"><v>9007199254740993</v></c></row>` +
				`<row r="8"><c r="A8"><v>1.0E+18</v></c></row>` +
				`<row r="9"><c r="A9"><v>5</v></c><c r="B9"><v>1.8E+19</v></c></row>`}}},
			want: "2|1000000000|13800000000|\n3|1000000000|1000000000|1500\n4|12.5|-3|0\n" +
				"5|9007199254740992|9007199254740992|\n6|1.2345678901234568E+18|||ERR:inexact\n" +
				// A phone beyond 2^53 is kept as written: the row's user id
				// is good, and the phone is found invalid later.
				"7|9007199254740993|||ERR:inexact\n8|1.0E+18|||ERR:inexact\n9|5|1.8E+19|\n",
		},
		{
			// Some writers keep a long id in a numeric cell with every
			// digit; a double's shortest form has 17 significant digits at
			// most, so more than 17 cannot be a double's rounding.
			name: "OKExactLongIntegersFromPreciseWriters",
			book: testBook{sheets: []testSheet{{name: "S", data: hdr +
				`<row r="2"><c r="A2"><v>1234567890123456789</v></c><c r="B2"><v>1234567890123456780</v></c></row>` +
				`<row r="3"><c r="A3" t="n"><v>9223372036854775807</v></c></row>` +
				`<row r="4"><c r="A4"><v>1234567890123456800</v></c></row>` +
				`<row r="5"><c r="A5"><v>1234567890123456789.0</v></c></row>` +
				`<row r="6"><c r="A6"><v>1.234567890123456789E+18</v></c></row>` +
				`<row r="7"><c r="A7"><v>9000000000000000000</v></c></row>` +
				`<row r="8"><c r="A8"><v>12345678901234567</v></c></row>` +
				`<row r="9"><c r="A9"><v>123456789012345678</v></c></row>`}}},
			want: "2|1234567890123456789|1234567890123456780|\n3|9223372036854775807||\n" +
				"4|1234567890123456800|||ERR:inexact\n5|1234567890123456789.0|||ERR:inexact\n" +
				"6|1.234567890123456789E+18|||ERR:inexact\n7|9000000000000000000|||ERR:inexact\n" +
				"8|12345678901234567|||ERR:inexact\n9|123456789012345678||\n",
		},
		{
			name: "OKFailureReportHeader",
			book: testBook{sheets: []testSheet{{name: "Failures", data: `<row r="1">` + is("A1", "行号 Row") + is("B1", "用户ID User ID") +
				is("C1", "原因 Reason") + is("D1", "代码 Code") + is("E1", "说明 Details") + `</row>` +
				`<row r="2"><c r="A2"><v>5</v></c>` + is("B2", "1234567890123456789") + is("C2", "库存不足 out of stock") +
				is("D2", "out_of_stock") + is("E2", "out of stock: the template had no coupons left") + `</row>` +
				`<row r="3"><c r="A3"><v>7</v></c><c r="B3"><v>1234567890123456800</v></c>` + is("D3", "inexact_number") + `</row>`}}},
			want: "2|1234567890123456789||\n3|1234567890123456800|||ERR:inexact\n",
		},
		{
			name: "OKUserHeaderOnTwoLines",
			book: testBook{sheets: []testSheet{{name: "S", data: `<row r="1">` + is("A1", "用户ID\nUser  ID") + `</row>` +
				`<row r="2">` + is("A2", "8") + `</row>`}}},
			want: "2|8||\n",
		},
		{
			name: "OKEntitiesCDATAComments",
			book: testBook{sheets: []testSheet{{name: "S", data: hdr +
				`<row r="2"><!-- note -->` + is("A2", "&#49;&#x32;3") + is("B2", "&lt;&gt;&quot;&apos;") +
				`<c r="C2" t="inlineStr"><is><t><![CDATA[a<b>&c]]>d</t></is></c></row>` +
				`<row r="3">` + is("A3", "a_x000D_b_x005F_x0041_") + `</row>`}}},
			want: "2|123|<>\"'|a<b>&cd\n3|a\rb_x0041_||\n",
		},
		{
			name: "OKSparseCellsAndGaps",
			book: testBook{sheets: []testSheet{{name: "S", data: `<row r="3">` + is("B3", "userId") + is("D3", "phone") + `</row>` +
				`<row r="7">` + is("D7", "139") + `</row>` +
				`<row r="8">` + is("B8", "8") + `</row>` +
				`<row r="1000">` + is("B1000", "1000") + is("C1000", "x") + is("D1000", "1") + `</row>`}}},
			want: "7||139|\n8|8||\n1000|1000|1|\n",
		},
		{
			name: "OKNoReferences",
			book: testBook{sheets: []testSheet{{name: "S", data: `<row><c t="inlineStr"><is><t>userId</t></is></c><c t="inlineStr"><is><t>mail</t></is></c></row>` +
				`<row><c t="inlineStr"><is><t>1</t></is></c><c t="inlineStr"><is><t>m</t></is></c></row>` +
				`<row r="9"><c t="inlineStr"><is><t>9</t></is></c></row><row><c r="B10" t="inlineStr"><is><t>m10</t></is></c></row>`}}},
			want: "2|1||m\n9|9||\n10|||m10\n",
		},
		{
			name: "OKBlankRowsSkipped",
			book: testBook{sheets: []testSheet{{name: "S", data: `<row r="1" spans="1:3"/>` +
				`<row r="2" s="3" customFormat="1"><c r="A2" s="1"/><c r="B2" s="1"></c></row>` +
				`<row r="3">` + is("A3", "userId") + `</row>` +
				`<row r="4"><c r="A4" s="2"/><c r="B4" t="inlineStr"><is><t>   </t></is></c><c r="C4"><v></v></c></row>` +
				`<row r="5">` + is("A5", "5") + `</row><row r="6" ht="20" customHeight="1"/>` +
				`<row r="7">` + is("A7", "\u3000") + `</row>` +
				`<row r="8">` + is("A8", "8") + `</row>`}}},
			want: "5|5||\n8|8||\n",
		},
		{
			name: "OKNamespacePrefix",
			book: testBook{sheets: []testSheet{{name: "S", raw: `<?xml version="1.0"?><x:worksheet xmlns:x="http://schemas.openxmlformats.org/spreadsheetml/2006/main">` +
				`<x:sheetData><x:row r="1"><x:c r="A1" t="inlineStr"><x:is><x:t>userId</x:t></x:is></x:c></x:row>` +
				`<x:row r="2"><x:c r="A2"><x:v>5</x:v></x:c></x:row></x:sheetData></x:worksheet>`}}},
			want: "2|5||\n",
		},
		{
			name: "OKWhitespaceAndAttributesEverywhere",
			book: testBook{sheets: []testSheet{{name: "S", raw: "<?xml version='1.0'?>\n<worksheet " + testNS + ">\n" +
				"<sheetPr><tabColor rgb='FF0000'/></sheetPr><dimension ref=\"A1:B2\"/>\n<sheetData>\n" +
				"  <row r = '1' >\n    <c r='A1' t = 'inlineStr' ><is>\n<t>userId</t>\n</is></c >\n  </row >\n" +
				"  <row r='2'><c r='A2' s='1' t='inlineStr'><is><t xml:space='preserve'> 12 </t></is></c></row>\n" +
				"</sheetData><mergeCells count='1'><mergeCell ref='A1:B1'/></mergeCells></worksheet>"}}},
			want: "2| 12 ||\n",
		},
		{
			name: "OKEmptySheetAfterHeader",
			book: testBook{sheets: []testSheet{{name: "S", data: hdr}}},
			want: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rows, err := readAll(t, buildXLSX(t, tt.book), "t.xlsx", Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := rowsString(rows); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestInexactMessage(t *testing.T) {
	t.Parallel()
	rows, err := readAll(t, oneSheet(t, hdr+`<row r="2"><c r="A2"><v>1.2345678901234568E+18</v></c></row>`), "t.xlsx", Options{})
	if err != nil {
		t.Fatal(err)
	}
	msg := rows[0].Err.Error()
	for _, want := range []string{"too large to be exact", "store the column as text", "1.2345678901234568E+18", "userId"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}

func TestSheetSelection(t *testing.T) {
	t.Parallel()
	// The workbook lists "Data" first although its part is sheet2.xml.
	book := testBook{sheets: []testSheet{
		{name: "Data", part: "worksheets/sheet2.xml", data: hdr + `<row r="2">` + is("A2", "from-data") + `</row>`},
		{name: "Other & more", part: "worksheets/sheet1.xml", data: hdr + `<row r="2">` + is("A2", "from-other") + `</row>`},
	}}
	data := buildXLSX(t, book)
	tests := []struct {
		name, sheet, want string
		err               error
	}{
		{"OKFirstInWorkbookOrder", "", "2|from-data||\n", nil},
		{"OKByName", "Other & more", "2|from-other||\n", nil},
		{"ErrSheetNotFound", "Nope", "", ErrSheetNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, err := readAll(t, data, "t.xlsx", Options{Sheet: tt.sheet})
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if err != nil {
				for _, name := range []string{`"Data"`, `"Other & more"`, `"Nope"`} {
					if !strings.Contains(err.Error(), name) {
						t.Errorf("error %q does not name %s", err, name)
					}
				}
				return
			}
			if got := rowsString(rows); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// zipOf zips the named parts as given, in order.
func zipOf(t testing.TB, method uint16, parts ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := 0; i < len(parts); i += 2 {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: parts[i], Method: method})
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, parts[i+1])
	}
	zw.Close()
	return buf.Bytes()
}

func TestXLSXErrors(t *testing.T) {
	t.Parallel()
	good := oneSheet(t, hdr+`<row r="2">`+is("A2", "1")+`</row>`)
	bomb := strings.Repeat(" ", 8<<20)
	tests := []struct {
		name string
		data []byte
		file string
		opt  Options
		err  error
		msg  string
	}{
		{"ErrNotZipNamedXLSX", []byte("hello, world\n"), "users.xlsx", Options{}, ErrTruncated, "corrupt .xlsx: the file is named .xlsx but is not a zip archive"},
		// An upload kept under a name of its own: Options.Name is the name
		// the merchant gave it.
		{"ErrNotZipUploadedAsXLSX", []byte("userId\n1\n"), "uploads/3f2a", Options{Name: "users.xlsx"}, ErrTruncated, "corrupt .xlsx: the file is named .xlsx"},
		{"ErrLegacyXLS", []byte("\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1 rest"), "users.xlsx", Options{}, ErrNotSpreadsheet, ".xls"},
		{"ErrTruncated", good[:len(good)/2], "t.xlsx", Options{}, ErrTruncated, "corrupt .xlsx: the archive is truncated or damaged"},
		{"ErrZipWithoutWorkbook", zipOf(t, zip.Deflate, "a.txt", "hi"), "t.xlsx", Options{}, ErrNotSpreadsheet, "workbook"},
		{"ErrNoWorksheet", buildXLSX(t, testBook{}), "t.xlsx", Options{}, ErrNoWorksheet, "no worksheet"},
		{"ErrNoUserIDColumn", oneSheet(t, `<row r="1">`+is("A1", "id")+is("B1", "phone")+`</row>`), "t.xlsx", Options{},
			ErrNoUserIDColumn, `userId, user_id, user id, 用户ID or 用户ID User ID (phone: phone, mobile or 手机号; mail: mail, email or 邮箱); found "id", "phone"`},
		{"ErrNoHeader", oneSheet(t, `<row r="1"><c r="A1" s="1"/></row>`), "t.xlsx", Options{}, ErrNoHeader, "empty"},
		{"ErrZipBombSize", oneSheet(t, hdr+`<row r="2">`+is("A2", strings.Repeat("9", 4000))+`</row>`), "t.xlsx",
			Options{MaxUncompressed: 2000}, ErrZipBomb, "limit"},
		{"ErrZipBombRatio", oneSheet(t, hdr+`<row r="2">`+is("A2", "1")+`</row>`+bomb), "t.xlsx", Options{}, ErrZipBomb, ":1"},
		{"ErrTooManyRows", oneSheet(t, hdr+`<row r="2">`+is("A2", "1")+`</row><row r="3">`+is("A3", "2")+`</row>`+
			`<row r="4">`+is("A4", "3")+`</row>`), "t.xlsx", Options{MaxRows: 2}, ErrTooManyRows, "more than 2"},
		{"ErrCellTooLong", oneSheet(t, hdr+`<row r="2">`+is("A2", strings.Repeat("1", MaxCellBytes+1))+`</row>`), "t.xlsx",
			Options{}, ErrTooLong, "row 2 column A"},
		{"ErrMalformedXML", oneSheet(t, hdr+`<row r="2"><c r="A2" t="inlineStr"><is><t>1</t></is></c></rowx>`), "t.xlsx",
			Options{}, ErrMalformed, "unexpected"},
		{"ErrMalformedEntity", oneSheet(t, hdr+`<row r="2">`+is("A2", "&bogus;")+`</row>`), "t.xlsx", Options{}, ErrMalformed, "entity"},
		{"ErrMalformedCellRef", oneSheet(t, hdr+`<row r="2">`+is("1A", "1")+`</row>`), "t.xlsx", Options{}, ErrMalformed, "reference"},
		{"ErrUnterminatedSheet", buildXLSX(t, testBook{sheets: []testSheet{{name: "S",
			raw: `<worksheet><sheetData>` + hdr + `<row r="2"><c r="A2"><v>1`}}}), "t.xlsx", Options{}, ErrMalformed, "ends inside row 2"},
		{"ErrNoSheetData", buildXLSX(t, testBook{sheets: []testSheet{{name: "S", raw: `<worksheet/>`}}}), "t.xlsx", Options{},
			ErrMalformed, "sheetData"},
		{"ErrSharedIndex", oneSheet(t, `<row r="1"><c r="A1" t="s"><v>7</v></c></row>`), "t.xlsx", Options{}, ErrMalformed, "shared string index"},
		{"ErrSharedStringsTooBig", buildXLSX(t, testBook{sst: `<si><t>userId</t></si><si><t>12345</t></si>`,
			sheets: []testSheet{{name: "S", data: `<row r="1"><c r="A1" t="s"><v>0</v></c></row>`}}}), "t.xlsx",
			Options{MaxSharedStrings: 20}, ErrTooLong, "MaxSharedStrings"},
		{"ErrDTD", buildXLSX(t, testBook{sheets: []testSheet{{name: "S",
			raw: `<!DOCTYPE x [<!ENTITY a "aaaa">]><worksheet><sheetData>` + hdr + `</sheetData></worksheet>`}}}), "t.xlsx",
			Options{}, ErrMalformed, "DTD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := readAll(t, tt.data, tt.file, tt.opt)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q lacks %q", err, tt.msg)
			}
		})
	}
}

// TestCorruptDeflate flips bytes inside the compressed worksheet: the
// reader must report a truncated or corrupt archive (or malformed XML),
// never rows made of garbage without an error.
func TestCorruptDeflate(t *testing.T) {
	t.Parallel()
	data, err := func() ([]byte, error) {
		var buf bytes.Buffer
		_, err := Generate(&buf, GenOptions{Rows: 2000, Seed: 3})
		return buf.Bytes(), err
	}()
	if err != nil {
		t.Fatal(err)
	}
	zr, _ := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	var off int64
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "sheet1.xml") {
			off, _ = f.DataOffset()
		}
	}
	for _, at := range []int64{100, 5000, 20000} {
		bad := bytes.Clone(data)
		bad[off+at] ^= 0x55
		_, err := readAll(t, bad, "t.xlsx", Options{})
		if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrMalformed) {
			t.Errorf("flip at %d: err = %v", at, err)
		}
	}
}

func TestStoredParts(t *testing.T) {
	t.Parallel()
	data := zipOf(t, zip.Store,
		"xl/workbook.xml", `<workbook `+testNS+`><sheets><sheet name="A" sheetId="1" r:id="rId1"/></sheets></workbook>`,
		"xl/_rels/workbook.xml.rels", `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">`+
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="/xl/worksheets/a.xml"/></Relationships>`,
		"xl/worksheets/a.xml", `<worksheet><sheetData>`+hdr+`<row r="2">`+is("A2", "1")+`</row></sheetData></worksheet>`)
	rows, err := readAll(t, data, "t.xlsx", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := rowsString(rows); got != "2|1||\n" {
		t.Errorf("got %q", got)
	}
}

// TestSplitEverywhere cuts a worksheet into chunks at every possible
// offset through a reader handing out one byte at a time and checks that
// the result does not depend on where the input was split.
func TestSplitEverywhere(t *testing.T) {
	t.Parallel()
	data := hdr + `<row r="2"><!-- c -->` + is("A2", "&amp;1") + `<c r="B2" t="inlineStr"><is><r><t>1</t></r><r><t><![CDATA[3]]></t></r></is></c>` +
		`<c r="C2"><v>1E3</v></c></row><row r="4"><c r="A4"><v>4</v></c></row>`
	sheet := `<?xml version="1.0"?><worksheet><sheetData>` + data + `</sheetData></worksheet>`
	want := "2|&1|13|1000\n4|4||\n"
	for step := 1; step < 40; step++ {
		src := &xlsxSource{maxRows: 100, x: &xscan{}, s: newStreamSize(strings.NewReader(sheet), step)}
		if err := src.readHeader(); err != nil {
			t.Fatal(err)
		}
		var got []Row
		for {
			b := batch{rows: make([]Row, 0, 1)}
			err := src.fill(&b)
			b.finish()
			got = append(got, b.rows...)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		src.close()
		if s := rowsString(got); s != want {
			t.Fatalf("step %d: got %q, want %q", step, s, want)
		}
	}
}

// TestLongRows sends rows longer than a chunk's headroom through tiny
// chunks, so the window switches between chunk buffers and the growing
// buffer.
func TestLongRows(t *testing.T) {
	t.Parallel()
	var sheet strings.Builder
	sheet.WriteString(`<worksheet><sheetData><row r="1">` + is("A1", "userId") + is("B1", "note") + `</row>`)
	var want strings.Builder
	for r := 2; r < 40; r++ {
		note := strings.Repeat("n", (r%3)*50_000)
		fmt.Fprintf(&sheet, `<row r="%d">%s%s</row>`, r, is(fmt.Sprint("A", r), fmt.Sprint(r)), is(fmt.Sprint("B", r), note))
		fmt.Fprintf(&want, "%d|%d||\n", r, r)
	}
	sheet.WriteString(`</sheetData></worksheet>`)
	for _, size := range []int{4096, 50_000, 70_000} {
		src := &xlsxSource{maxRows: 100, x: &xscan{}, s: newStreamSize(strings.NewReader(sheet.String()), size)}
		if err := src.readHeader(); err != nil {
			t.Fatal(err)
		}
		var got []Row
		for {
			b := batch{rows: make([]Row, 0, 2)}
			err := src.fill(&b)
			b.finish()
			got = append(got, b.rows...)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		src.close()
		if s := rowsString(got); s != want.String() {
			t.Fatalf("chunk %d: got %q", size, s)
		}
	}
}
