package notify

import (
	"testing"

	"github.com/quanhq/quan"
)

func TestParseContactRow(t *testing.T) {
	for _, tt := range []struct {
		name   string
		row    quan.FileRow
		want   quan.ContactRow
		reason string
		field  string
	}{
		{"OKAll", quan.FileRow{UserID: " 7 ", Phone: "+86 138-0000-0001", Mail: "A@Example.CN", Lang: " EN "},
			quan.ContactRow{UserID: 7, Phone: "+8613800000001", Mail: "A@example.cn", Lang: quan.LangEN}, "", ""},
		{"OKOnlyLang", quan.FileRow{UserID: "7", Lang: "zh"}, quan.ContactRow{UserID: 7, Lang: quan.LangZH}, "", ""},
		{"InvalidID", quan.FileRow{UserID: "0", Phone: "13800000001"}, quan.ContactRow{}, quan.ImportInvalidID, ""},
		{"InexactID", quan.FileRow{UserID: "1234567890123456800", Inexact: true, Phone: "13800000001"}, quan.ContactRow{}, quan.ImportInvalidID, ""},
		{"InvalidPhone", quan.FileRow{UserID: "7", Phone: "1380000000"}, quan.ContactRow{UserID: 7}, ImportInvalidContact, "phone"},
		{"InvalidMail", quan.FileRow{UserID: "7", Phone: "13800000001", Mail: "a@b"}, quan.ContactRow{UserID: 7, Phone: "+8613800000001"}, ImportInvalidContact, "mail"},
		{"InvalidLang", quan.FileRow{UserID: "7", Lang: "fr"}, quan.ContactRow{UserID: 7}, ImportInvalidContact, "lang"},
		{"NoContact", quan.FileRow{UserID: "7", Phone: "  ", Mail: "\t"}, quan.ContactRow{UserID: 7}, ImportNoContact, ""},
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
