package quan

import "testing"

func TestParseContactRow(t *testing.T) {
	for _, tt := range []struct {
		name   string
		row    FileRow
		want   ContactRow
		reason string
		field  string
	}{
		{"OKAll", FileRow{UserID: " 7 ", Phone: "+86 138-0000-0001", Mail: "A@Example.CN", Lang: " EN "},
			ContactRow{UserID: 7, Phone: "+8613800000001", Mail: "A@example.cn", Lang: LangEN}, "", ""},
		{"OKOnlyLang", FileRow{UserID: "7", Lang: "zh"}, ContactRow{UserID: 7, Lang: LangZH}, "", ""},
		{"InvalidID", FileRow{UserID: "0", Phone: "13800000001"}, ContactRow{}, ImportInvalidID, ""},
		{"InexactID", FileRow{UserID: "1234567890123456800", Inexact: true, Phone: "13800000001"}, ContactRow{}, ImportInvalidID, ""},
		{"InvalidPhone", FileRow{UserID: "7", Phone: "1380000000"}, ContactRow{UserID: 7}, ImportInvalidContact, "phone"},
		{"InvalidMail", FileRow{UserID: "7", Phone: "13800000001", Mail: "a@b"}, ContactRow{UserID: 7, Phone: "+8613800000001"}, ImportInvalidContact, "mail"},
		{"InvalidLang", FileRow{UserID: "7", Lang: "fr"}, ContactRow{UserID: 7}, ImportInvalidContact, "lang"},
		{"NoContact", FileRow{UserID: "7", Phone: "  ", Mail: "\t"}, ContactRow{UserID: 7}, ImportNoContact, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, fail := parseContactRow(tt.row)
			if got != tt.want {
				t.Errorf("row %+v, want %+v", got, tt.want)
			}
			switch {
			case tt.reason == "" && fail != nil:
				t.Errorf("failed %+v", fail)
			case tt.reason != "" && (fail == nil || fail.Reason != tt.reason || fail.Field != tt.field || fail.Message == ""):
				t.Errorf("failure %+v, want %s (%s)", fail, tt.reason, tt.field)
			}
		})
	}
}
