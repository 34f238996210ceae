package http

import (
	"encoding/json"
	"io"
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

// FuzzCheckText: checkText ends on any bytes, JSON or not (readClaims
// calls it on claims encoding/json may refuse), and on JSON it finds a
// problem in a body exactly when encoding/json would decode one of its
// strings otherwise than a strict reading: to U+FFFD it did not see
// written, or to a control character other than tab, line feed and
// carriage return.
func FuzzCheckText(f *testing.F) {
	for _, s := range []string{
		`{"a":"x\ud800"}`, `["\udc00",1]`, "{\"a\":\"\xff\"}", `{"a\u0000":1}`, `{"a":"\ud83c\udf9f"}`,
		`{"a":"\ufffd"}`, `{"a":[{"b":"\u007f"}]}`, `{"a":`, `[}`, `{"a" 1}`, `"\ud800\ud800\udc00"`, `{:}`, `]`,
		`{"a":"\t\n\r\\\/\b"}`, "\"\u0085\"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		bad := checkText(body)
		if !json.Valid(body) {
			return
		}
		want := strictProblem(t, body)
		if (len(bad) > 0) != want {
			t.Fatalf("checkText(%q) = %v; a strict reading finds a problem: %v", body, bad, want)
		}
	})
}

// strictProblem reports whether a string of body, a JSON value, as
// encoding/json decodes it (every key and value, repeated keys too),
// holds a control character other than tab, line feed and carriage
// return, or a U+FFFD that body does not write as such (in UTF-8 or as
// \ufffd).
func strictProblem(t *testing.T, body []byte) bool {
	written := strings.Count(string(body), "\uFFFD") + strings.Count(strings.ToLower(string(body)), `\ufffd`)
	seen := 0
	dec := json.NewDecoder(strings.NewReader(string(body)))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		s, ok := tok.(string)
		if !ok {
			continue
		}
		for _, r := range s {
			switch {
			case r == '\uFFFD':
				seen++
			case r == '\t' || r == '\n' || r == '\r':
			case r < 0x20 || (r >= 0x7f && r <= 0x9f):
				return true
			}
		}
	}
	return seen > written
}
