package http

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// jsonClaims reads raw as encoding/json does, the way parseMinted must
// agree with.
func jsonClaims(raw []byte) (tokenClaims, bool) {
	var m mintedClaims
	if json.Unmarshal(raw, &m) != nil {
		return tokenClaims{}, false
	}
	c := tokenClaims{role: m.Role, shop: m.ShopNo, uid: m.UserID, iss: m.Issuer, sub: m.Subject}
	if m.ExpiresAt != nil {
		c.exp, c.hasExp = *m.ExpiresAt, true
	}
	if m.NotBefore != nil {
		c.nbf, c.hasNbf = *m.NotBefore, true
	}
	return c, true
}

// checkParseMinted fails if parseMinted accepts raw and encoding/json
// refuses it or reads it otherwise. It reports whether parseMinted took it.
func checkParseMinted(t *testing.T, raw []byte) bool {
	t.Helper()
	var fast tokenClaims
	if !parseMinted(raw, &fast) {
		return false
	}
	slow, ok := jsonClaims(raw)
	switch {
	case !ok:
		t.Fatalf("parseMinted took %q, which encoding/json refuses", raw)
	case fast != slow:
		t.Fatalf("parseMinted read %q as %+v, encoding/json as %+v", raw, fast, slow)
	}
	return true
}

// TestParseMintedReadsMint: every token Mint writes takes the short way,
// unless its subject needs escapes, and reads as encoding/json reads it.
func TestParseMintedReadsMint(t *testing.T) {
	clock := newTestClock()
	tk := newCachingTokens(t, clock, 1)
	for _, tc := range []struct {
		id   quan.Identity
		fast bool
	}{
		{user(1), true},
		{user(1<<53 + 1), true},
		{user(1<<62 + 12345), false}, // 19 digits: encoding/json reads it
		{quan.Identity{Role: quan.RoleMerchant, ShopNo: 42}, true},
		{quan.Identity{Role: quan.RoleMerchant, ShopNo: 42, Subject: "shop-42-admin"}, true},
		{quan.Identity{Role: quan.RoleAdmin}, true},
		{quan.Identity{Role: quan.RoleAdmin, Subject: "运营 ops é 🎟"}, true},
		{quan.Identity{Role: quan.RoleAdmin, Subject: `a "quoted" \ one`}, false},
		{quan.Identity{Role: quan.RoleAdmin, Subject: "<script>&"}, false}, // json.Marshal writes \u003c
		{quan.Identity{Role: quan.RoleAdmin, Subject: "line\u2028sep"}, false},
	} {
		tok := mint(t, tk, tc.id, time.Hour)
		payload := strings.Split(tok, ".")[1]
		raw, err := base64.RawURLEncoding.DecodeString(payload)
		if err != nil {
			t.Fatal(err)
		}
		if got := checkParseMinted(t, raw); got != tc.fast {
			t.Errorf("%+v: parseMinted(%s) took it: %v, want %v", tc.id, raw, got, tc.fast)
		}
		id, err := tk.Verify(tok)
		if err != nil {
			t.Fatalf("%+v: %v", tc.id, err)
		}
		want := tc.id
		if want.Subject == "" {
			want.Subject = tc.id.String()
		}
		if id != want {
			t.Fatalf("Verify = %+v, want %+v", id, want)
		}
	}
}

// parseMintedCases are payloads near Mint's shape. fast says whether
// parseMinted takes them; whatever it takes must read as encoding/json
// reads it.
var parseMintedCases = []struct {
	name, raw string
	fast      bool
}{
	{"User", `{"role":"user","uid":"5","iss":"quan","sub":"user:5","exp":1795359542,"iat":1795355942}`, true},
	{"Merchant", `{"role":"merchant","shop":3,"iss":"quan","sub":"merchant:3","exp":1795359542,"iat":1795355942}`, true},
	{"Admin", `{"role":"admin","iss":"quan","sub":"ops","exp":1795359542,"iat":1795355942}`, true},
	{"WithNbf", `{"role":"user","uid":"5","iss":"quan","sub":"user:5","exp":1795359542,"nbf":1795355942,"iat":1795355942}`, true},
	{"NoIat", `{"role":"user","uid":"5","iss":"quan","sub":"user:5","exp":1795359542}`, true},
	{"ShopAndUid", `{"role":"user","shop":0,"uid":"5","iss":"quan","sub":"user:5","exp":1,"iat":1}`, true},
	{"OtherIssuer", `{"role":"user","uid":"5","iss":"evil","sub":"user:5","exp":1,"iat":1}`, true},
	{"UnknownRole", `{"role":"root","uid":"5","iss":"quan","sub":"x","exp":1,"iat":1}`, true},
	{"EmptyStrings", `{"role":"","iss":"","sub":"","exp":0}`, true},
	{"NegativeZero", `{"role":"user","uid":"-0","iss":"quan","sub":"u","exp":-0,"iat":-0}`, true},
	{"Negative", `{"role":"user","uid":"-5","iss":"quan","sub":"u","exp":-17,"iat":1}`, true},
	{"EighteenDigits", `{"role":"user","uid":"999999999999999999","iss":"quan","sub":"u","exp":999999999999999999}`, true},
	{"Unicode", `{"role":"admin","iss":"quan","sub":"运营 é 🎟","exp":1}`, true},

	{"EscapedSubject", `{"role":"admin","iss":"quan","sub":"a\u003cb","exp":1}`, false},
	{"EscapedQuote", `{"role":"admin","iss":"quan","sub":"a\"b","exp":1}`, false},
	{"EscapedRole", `{"role":"us\u0065r","uid":"5","iss":"quan","sub":"u","exp":1}`, false},
	{"EscapedIssuer", `{"role":"user","uid":"5","iss":"qu\u0061n","sub":"u","exp":1}`, false},
	{"ControlInString", "{\"role\":\"admin\",\"iss\":\"quan\",\"sub\":\"a\tb\",\"exp\":1}", false},
	{"BadUTF8", "{\"role\":\"admin\",\"iss\":\"quan\",\"sub\":\"a\xffb\",\"exp\":1}", false},
	{"Surrogate", "{\"role\":\"admin\",\"iss\":\"quan\",\"sub\":\"a\xed\xa0\x80b\",\"exp\":1}", false},
	{"Reordered", `{"iss":"quan","role":"user","uid":"5","sub":"user:5","exp":1}`, false},
	{"UpperKey", `{"Role":"user","uid":"5","iss":"quan","sub":"user:5","exp":1}`, false},
	{"UpperLaterKey", `{"role":"user","UID":"5","iss":"quan","sub":"user:5","exp":1}`, false},
	{"DuplicateUid", `{"role":"user","uid":"5","uid":"6","iss":"quan","sub":"user:5","exp":1}`, false},
	{"DuplicateSub", `{"role":"user","uid":"5","iss":"quan","sub":"user:5","sub":"x","exp":1}`, false},
	{"DuplicateExpAtEnd", `{"role":"user","uid":"5","iss":"quan","sub":"user:5","exp":1,"iat":1,"exp":9}`, false},
	{"ExtraField", `{"role":"user","uid":"5","iss":"quan","sub":"user:5","exp":1,"iat":1,"jti":"x"}`, false},
	{"ExtraFieldFirst", `{"aud":"x","role":"user","uid":"5","iss":"quan","sub":"user:5","exp":1}`, false},
	{"NoExp", `{"role":"user","uid":"5","iss":"quan","sub":"user:5","iat":1}`, false},
	{"NullExp", `{"role":"user","uid":"5","iss":"quan","sub":"user:5","exp":null}`, false},
	{"FractionalExp", `{"role":"user","uid":"5","iss":"quan","sub":"u","exp":1.5}`, false},
	{"ExponentExp", `{"role":"user","uid":"5","iss":"quan","sub":"u","exp":1e3}`, false},
	{"FractionalIat", `{"role":"user","uid":"5","iss":"quan","sub":"u","exp":1,"iat":1.5}`, false},
	{"LeadingZero", `{"role":"user","uid":"5","iss":"quan","sub":"u","exp":01}`, false},
	{"PlusSign", `{"role":"user","uid":"+5","iss":"quan","sub":"u","exp":1}`, false},
	{"NineteenDigits", `{"role":"user","uid":"5","iss":"quan","sub":"u","exp":1000000000000000000}`, false},
	{"ExpOverflow", `{"role":"user","uid":"5","iss":"quan","sub":"u","exp":9223372036854775808}`, false},
	{"UidOverflow", `{"role":"user","uid":"99999999999999999999","iss":"quan","sub":"u","exp":1}`, false},
	{"UidUnquoted", `{"role":"user","uid":5,"iss":"quan","sub":"u","exp":1}`, false},
	{"UidSpace", `{"role":"user","uid":" 5","iss":"quan","sub":"u","exp":1}`, false},
	{"UidEmpty", `{"role":"user","uid":"","iss":"quan","sub":"u","exp":1}`, false},
	{"ShopQuoted", `{"role":"merchant","shop":"3","iss":"quan","sub":"u","exp":1}`, false},
	{"ShopNegativeOnly", `{"role":"merchant","shop":-,"iss":"quan","sub":"u","exp":1}`, false},
	{"RoleNumber", `{"role":1,"iss":"quan","sub":"u","exp":1}`, false},
	{"Spaces", `{"role": "user","uid":"5","iss":"quan","sub":"u","exp":1}`, false},
	{"SpaceBeforeBrace", `{"role":"user","uid":"5","iss":"quan","sub":"u","exp":1 }`, false},
	{"LeadingSpace", ` {"role":"user","uid":"5","iss":"quan","sub":"u","exp":1}`, false},
	{"TrailingNewline", "{\"role\":\"user\",\"uid\":\"5\",\"iss\":\"quan\",\"sub\":\"u\",\"exp\":1}\n", false},
	{"TrailingGarbage", `{"role":"user","uid":"5","iss":"quan","sub":"u","exp":1}x`, false},
	{"TwoObjects", `{"role":"user","uid":"5","iss":"quan","sub":"u","exp":1}{}`, false},
	{"Unterminated", `{"role":"user","uid":"5","iss":"quan","sub":"u","exp":1`, false},
	{"UnterminatedString", `{"role":"user","uid":"5","iss":"quan","sub":"u`, false},
	{"Empty", ``, false},
	{"Array", `[]`, false},
}

// TestParseMintedAgreesWithJSON: parseMinted takes Mint's shape and
// nothing near it that encoding/json would read otherwise.
func TestParseMintedAgreesWithJSON(t *testing.T) {
	for _, tc := range parseMintedCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := checkParseMinted(t, []byte(tc.raw)); got != tc.fast {
				t.Fatalf("parseMinted took %s: %v, want %v", tc.raw, got, tc.fast)
			}
		})
	}
}

// TestVerifyReadsAsJSON: a signed payload parseMinted leaves alone is read
// by encoding/json as before: a repeated uid counts by its last value.
func TestVerifyReadsAsJSON(t *testing.T) {
	clock := newTestClock()
	tk := newCachingTokens(t, clock, 1)
	exp := clock.now().Add(time.Hour).Unix()
	for _, tc := range []struct {
		name, claims string
		uid          int64
	}{
		{"Reordered", `{"sub":"user:5","iss":"quan","uid":"5","role":"user","exp":%d}`, 5},
		{"Spaces", `{ "role" : "user", "uid" : "5", "iss" : "quan", "sub" : "user:5", "exp" : %d }`, 5},
		{"DuplicateUid", `{"role":"user","uid":"5","uid":"6","iss":"quan","sub":"user:6","exp":%d}`, 6},
		{"UpperKeys", `{"ROLE":"user","Uid":"7","ISS":"quan","sub":"user:7","exp":%d}`, 7},
		{"EscapedRole", `{"role":"us\u0065r","uid":"8","iss":"qu\u0061n","sub":"user:8","exp":%d}`, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			claims := fmt.Sprintf(tc.claims, exp)
			tok := sign(tk.secret, `{"alg":"HS256","typ":"JWT"}`, claims)
			id, err := tk.Verify(tok)
			if err != nil || id.UserID != tc.uid || id.Role != quan.RoleUser {
				t.Fatalf("Verify(%s) = %+v, %v; want user %d", claims, id, err, tc.uid)
			}
		})
	}
}

// FuzzParseMinted: whatever parseMinted takes, encoding/json reads the
// same. Run it with go test -run XXX -fuzz FuzzParseMinted ./http/.
func FuzzParseMinted(f *testing.F) {
	for _, tc := range parseMintedCases {
		f.Add([]byte(tc.raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkParseMinted(t, raw)
	})
}
