package http

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/quanhq/quan"
)

// sign makes a token of header and claims signed with secret, byte for
// byte as given.
func sign(secret []byte, header, claims string) string {
	enc := base64.RawURLEncoding
	s := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(claims))
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(s))
	return s + "." + enc.EncodeToString(mac.Sum(nil))
}

// TestVerifyMintedAgreesWithTheLibrary: a minted token takes the short
// way and comes out as the JWT library reads it.
func TestVerifyMintedAgreesWithTheLibrary(t *testing.T) {
	clock := newTestClock()
	tk := newCachingTokens(t, clock, 1)
	tk.cache = nil
	for _, who := range []quan.Identity{
		{Role: quan.RoleUser, UserID: 1<<53 + 1}, // beyond a float64's integers: uid is a string
		{Role: quan.RoleMerchant, ShopNo: 7},
		{Role: quan.RoleAdmin, Subject: "ops@example.com"},
	} {
		tok := mint(t, tk, who, time.Hour)
		if !strings.HasPrefix(tok, mintedHeader+".") {
			t.Fatalf("Mint wrote another header: %s", tok)
		}
		fast, ok, err := tk.verifyMinted(tok)
		if !ok || err != nil {
			t.Fatalf("verifyMinted(%+v) = %v, %v; want the short way", who, ok, err)
		}
		var c jwtClaims
		if _, err := jwt.ParseWithClaims(tok, &c, func(*jwt.Token) (any, error) { return tk.secret, nil }, jwt.WithTimeFunc(clock.now)); err != nil {
			t.Fatal(err)
		}
		lib := quan.Identity{Subject: c.Subject, Role: c.Role, ShopNo: c.ShopNo, UserID: c.UserID}
		if fast != lib {
			t.Fatalf("short way %+v, library %+v", fast, lib)
		}
	}
}

// TestVerifyOtherShapes: tokens signed with the secret but not shaped as
// Mint makes them go the library's way and get its answer; tokens of the
// minted shape that break a rule are refused on the short way.
func TestVerifyOtherShapes(t *testing.T) {
	clock := newTestClock()
	tk := newCachingTokens(t, clock, 1)
	tk.cache = nil
	now := clock.now().Unix()
	claimsOf := func(m map[string]any) string {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	good := map[string]any{"role": "user", "uid": "5", "iss": "quan", "sub": "user:5", "exp": now + 60}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for k, v := range good {
			m[k] = v
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	const minted = `{"alg":"HS256","typ":"JWT"}`
	for _, tc := range []struct {
		name, header string
		claims       map[string]any
		ok           bool
	}{
		{"Minted", minted, good, true},
		{"FieldsInAnotherOrder", `{"typ":"JWT","alg":"HS256"}`, good, true},
		{"FractionalExp", minted, with("exp", float64(now)+60.5), true},
		{"AnotherIssuer", minted, with("iss", "other"), false},
		{"NoExp", minted, with("exp", nil), false},
		{"Expired", minted, with("exp", now), false},
		{"NotYet", minted, with("nbf", now+1), false},
		{"NbfNow", minted, with("nbf", now), true},
		{"NoUser", minted, with("uid", nil), false},
		{"AlgNone", `{"alg":"none","typ":"JWT"}`, good, false},
		{"AnotherOrderExpired", `{"typ":"JWT","alg":"HS256"}`, with("exp", now-1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := sign(tk.secret, tc.header, claimsOf(tc.claims))
			id, err := tk.Verify(tok)
			switch {
			case tc.ok && (err != nil || id.UserID != 5 || id.Role != quan.RoleUser):
				t.Fatalf("Verify = %+v, %v; want user 5", id, err)
			case !tc.ok && err == nil:
				t.Fatalf("Verify = %+v; want it refused", id)
			case !tc.ok && quan.ErrorCode(err) != quan.EUNAUTHORIZED && quan.ErrorCode(err) != quan.EINVALID:
				t.Fatalf("Verify: %v; want unauthorized", err)
			}
		})
	}
}

// TestVerifySignatureCanonical: a signature whose last symbol differs
// only in the bits base64 drops decodes to the same bytes; it is refused
// all the same.
func TestVerifySignatureCanonical(t *testing.T) {
	clock := newTestClock()
	tk := newCachingTokens(t, clock, 1)
	tk.cache = nil
	tok := mint(t, tk, user(3), time.Hour)
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	last := strings.IndexByte(alphabet, tok[len(tok)-1])
	twin := tok[:len(tok)-1] + string(alphabet[last^1]) // the lowest of the 2 dropped bits
	a, _ := base64.RawURLEncoding.DecodeString(tok[strings.LastIndexByte(tok, '.')+1:])
	b, _ := base64.RawURLEncoding.DecodeString(twin[strings.LastIndexByte(twin, '.')+1:])
	if string(a) != string(b) {
		t.Fatalf("the twin signature decodes to other bytes: pick other bits")
	}
	wantUnauthorized(t, tk, twin, "a signature in a non-canonical encoding")
	if _, err := tk.Verify(tok); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyMACReused: the pooled HMAC starts afresh whatever the last
// verification did, a refusal, a long token or a good one.
func TestVerifyMACReused(t *testing.T) {
	clock := newTestClock()
	tk := newCachingTokens(t, clock, 1)
	tk.cache = nil
	good := mint(t, tk, user(9), time.Hour)
	long := mint(t, tk, quan.Identity{Role: quan.RoleAdmin, Subject: strings.Repeat("x", 2*maxPooledToken)}, time.Hour)
	for i := range 20 {
		wantUnauthorized(t, tk, good[:len(good)-1]+"A", "a bad signature")
		wantUnauthorized(t, tk, good+"A", "a long signature")
		if i%3 == 0 {
			if id, err := tk.Verify(long); err != nil || id.Role != quan.RoleAdmin {
				t.Fatalf("long token: %+v, %v", id, err)
			}
		}
		if id, err := tk.Verify(good); err != nil || id.UserID != 9 {
			t.Fatalf("round %d: %+v, %v", i, id, err)
		}
	}
}

// TestVerifyAllocs: a verification on the short way allocates only the
// identity's subject: no hmac.New, no encoding/json.
func TestVerifyAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	clock := newTestClock()
	tk := newCachingTokens(t, clock, 1)
	tk.cache = nil
	tok := mint(t, tk, user(9), time.Hour)
	tk.Verify(tok) // fills the pool
	if n := testing.AllocsPerRun(100, func() {
		if _, err := tk.Verify(tok); err != nil {
			t.Fatal(err)
		}
	}); n > 1 {
		t.Fatalf("Verify allocates %.0f times; want 1, the subject", n)
	}
}

// TestVerifyRefusesBadText: a token signed with the secret whose claims
// hold text no request body may (bytes that are not UTF-8, half a
// surrogate pair, a control character) is refused, whether it is of
// Mint's shape (where parseMinted passes it to encoding/json, which
// would read the first two as U+FFFD) or not (the library's way); and
// Mint refuses a subject with a control character. The same claims with
// a whole surrogate pair pass.
func TestVerifyRefusesBadText(t *testing.T) {
	clock := newTestClock()
	tk := newCachingTokens(t, clock, 1)
	tk.cache = nil
	exp := clock.now().Add(time.Hour).Unix()
	const (
		minted = `{"alg":"HS256","typ":"JWT"}`
		other  = `{"typ":"JWT","alg":"HS256"}`
	)
	for _, header := range []string{minted, other} {
		for _, tc := range []struct {
			name, sub string
			ok        bool
		}{
			{"LoneSurrogate", `a\ud800b`, false},
			{"LoneLowSurrogate", `a\udc00b`, false},
			{"InvalidUTF8", "a\xffb", false},
			{"NUL", `a\u0000b`, false},
			{"Escape", `a\u001bb`, false},
			{"Tab", `a\tb`, false}, // Identity.Validate: a subject is one line
			{"SurrogatePair", `a\ud83c\udf9fb`, true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				claims := fmt.Sprintf(`{"role":"admin","iss":"quan","sub":"%s","exp":%d}`, tc.sub, exp)
				id, err := tk.Verify(sign(tk.secret, header, claims))
				switch {
				case tc.ok && (err != nil || id.Subject != "a🎟b"):
					t.Fatalf("Verify(%s) = %+v, %v; want admin a🎟b", claims, id, err)
				case !tc.ok && quan.ErrorCode(err) != quan.EUNAUTHORIZED:
					t.Fatalf("Verify(%s) = %+v, %v; want it refused", claims, id, err)
				}
			})
		}
	}
	if _, err := tk.Mint(quan.Identity{Role: quan.RoleAdmin, Subject: "tab\there"}, time.Hour); quan.ErrorCode(err) != quan.EUNAUTHORIZED {
		t.Fatalf("Mint of a subject with a tab: %v; want it refused", err)
	}
}
