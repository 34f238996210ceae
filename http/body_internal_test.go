package http

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/templates"
	"github.com/quanhq/quan/wallet"
)

// FuzzUnmarshalStrict checks that whenever encoding/json refuses a body
// that is JSON, unmarshalStrict names at least one field, and never in Go's
// words.
func FuzzUnmarshalStrict(f *testing.F) {
	for _, s := range []string{
		`[1,2]`, `{"rule":{"amount":1e30}}`, `{"issueStart":"tomorrow"}`, `{"scope":{"ids":[1]}}`,
		`{"name":"x","stock":-1}`, `{"validity":{"start":null,"hours":1.0}}`, `{"Name":"x","NAME":3}`,
		`{"items":[{"sku":"a","unitPrice":1e3}]}`, `{"couponIds":[-0]}`, `{"rule":{"rate":"85"}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		if !json.Valid([]byte(body)) {
			return
		}
		for _, v := range []any{new(templates.NewTemplate), new(wallet.LockRequest)} {
			err := unmarshalStrict([]byte(body), v)
			if err == nil {
				continue
			}
			fields := quan.ErrorFields(err)
			if quan.ErrorCode(err) != quan.EINVALID || (len(fields) == 0 && !strings.Contains(quan.ErrorMessage(err), "more than one") && !strings.Contains(quan.ErrorMessage(err), "empty")) {
				t.Fatalf("%s: %v names no field", body, err)
			}
			for _, fe := range fields {
				for _, w := range []string{"quan.", "int64", "TemplateSpec", "2006-01-02"} {
					if strings.Contains(fe.Field+fe.Message, w) {
						t.Fatalf("%s: %v shows %q", body, err, w)
					}
				}
			}
		}
	})
}
