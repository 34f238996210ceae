package sheet

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestOthers: with Options.Others every named column besides the user id
// comes back in Row.Others under Reader.Others, from CSV and xlsx alike:
// shared strings, inline strings and numbers (normalised), cells missing
// from a row as "", and phone and mail as others rather than fields.
func TestOthers(t *testing.T) {
	csv := "userId,level,,phone,vip\n" +
		"1,2,x,138,gold\n" +
		"2,1E3\n" + // short record: the others it lacks are ""
		"3,,,,silver\n"
	xlsx := buildXLSX(t, testBook{
		sst: `<si><t>vip</t></si><si><t>gold</t></si>`,
		sheets: []testSheet{{name: "Sheet1", data: `<row r="1">` + is("A1", "userId") + is("B1", "level") + is("D1", "phone") +
			`<c r="E1" t="s"><v>0</v></c></row>` +
			`<row r="2"><c r="A2"><v>1</v></c><c r="B2"><v>2</v></c>` + is("C2", "x") + is("D2", "138") + `<c r="E2" t="s"><v>1</v></c></row>` +
			`<row r="3"><c r="A3"><v>2</v></c><c r="B3"><v>1E3</v></c></row>` +
			`<row r="4">` + is("A4", "3") + is("E4", "silver") + `</row>`}},
	})
	want := "1|2,138,gold\n2|1E3,,\n3|,,silver\n"
	wantXLSX := "1|2,138,gold\n2|1000,,\n3|,,silver\n" // a numeric cell reads as typed
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{{"users.csv", []byte(csv), want}, {"users.xlsx", xlsx, wantXLSX}} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := New(bytes.NewReader(tc.data), int64(len(tc.data)), tc.name, Options{Others: true})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if got := r.Others(); !slices.Equal(got, []string{"level", "phone", "vip"}) {
				t.Errorf("Others() = %q", got)
			}
			rows, err := readAll(t, tc.data, tc.name, Options{Others: true})
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, row := range rows {
				if row.Phone != "" {
					t.Errorf("line %d: phone %q is a field with Others", row.Line, row.Phone)
				}
				fmt.Fprintf(&b, "%s|%s\n", row.UserID, strings.Join(row.Others, ","))
			}
			if b.String() != tc.want {
				t.Errorf("rows\n%swant\n%s", b.String(), tc.want)
			}
			// Without the option: no others, the phone a field.
			rows, err = readAll(t, tc.data, tc.name, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if rows[0].Others != nil || rows[0].Phone != "138" {
				t.Errorf("without Others: %+v", rows[0])
			}
		})
	}
}
