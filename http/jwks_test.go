package http_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/quanhq/quan"
	qhttp "github.com/quanhq/quan/http"
)

const (
	idpIssuer   = "https://id.shop.example"
	idpAudience = "quan"
)

// idpKey is a signing key of a test identity provider.
type idpKey struct {
	kid  string
	alg  string // RS256 or ES256
	priv crypto.Signer
}

// Keys are slow to make (RSA): each test takes them from here.
var (
	keysMu   sync.Mutex
	keysMade = map[string]idpKey{}
)

func newIdPKey(t testing.TB, alg, kid string) idpKey {
	t.Helper()
	keysMu.Lock()
	defer keysMu.Unlock()
	if k, ok := keysMade[alg+"/"+kid]; ok {
		return k
	}
	k := idpKey{kid: kid, alg: alg}
	var err error
	switch alg {
	case "RS256":
		k.priv, err = rsa.GenerateKey(rand.Reader, 2048)
	case "ES256":
		k.priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	default:
		t.Fatalf("no key for %s", alg)
	}
	if err != nil {
		t.Fatal(err)
	}
	keysMade[alg+"/"+kid] = k
	return k
}

// jwk is the key's public half as a JSON Web Key.
func (k idpKey) jwk() map[string]any {
	b64 := base64.RawURLEncoding.EncodeToString
	switch pub := k.priv.Public().(type) {
	case *rsa.PublicKey:
		return map[string]any{"kty": "RSA", "kid": k.kid, "alg": "RS256", "use": "sig",
			"n": b64(pub.N.Bytes()), "e": b64(big.NewInt(int64(pub.E)).Bytes())}
	case *ecdsa.PublicKey:
		b, _ := pub.Bytes() // 0x04 || x || y
		return map[string]any{"kty": "EC", "kid": k.kid, "crv": "P-256", "x": b64(b[1:33]), "y": b64(b[33:])}
	}
	panic("unknown key")
}

// sign returns a token of claims signed by k, with its kid.
func (k idpKey) sign(t testing.TB, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.GetSigningMethod(k.alg), claims)
	tok.Header["kid"] = k.kid
	s, err := tok.SignedString(k.priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// shopper returns the claims of a good token for user at now.
func shopper(user string, now time.Time) jwt.MapClaims {
	return jwt.MapClaims{"iss": idpIssuer, "aud": idpAudience, "sub": user,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
}

func jwksJSON(keys ...idpKey) []byte {
	set := map[string]any{"keys": []any{}}
	for _, k := range keys {
		set["keys"] = append(set["keys"].([]any), k.jwk())
	}
	b, _ := json.Marshal(set)
	return b
}

// testIdP serves a key set over HTTP, as a platform's identity provider
// does, and counts the reads.
type testIdP struct {
	*httptest.Server
	mu    sync.Mutex
	set   []byte
	down  bool
	reads atomic.Int64
}

func newTestIdP(t *testing.T, keys ...idpKey) *testIdP {
	t.Helper()
	idp := &testIdP{set: jwksJSON(keys...)}
	idp.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		idp.reads.Add(1)
		idp.mu.Lock()
		defer idp.mu.Unlock()
		if idp.down {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(idp.set)
	}))
	t.Cleanup(idp.Close)
	return idp
}

func (idp *testIdP) publish(keys ...idpKey) {
	idp.mu.Lock()
	defer idp.mu.Unlock()
	idp.set = jwksJSON(keys...)
}

func (idp *testIdP) setDown(down bool) {
	idp.mu.Lock()
	defer idp.mu.Unlock()
	idp.down = down
}

// newJWKSServer is a test server whose tokens trust the key set at
// source, as quan serve --jwt-jwks source --jwt-issuer idpIssuer
// --jwt-audience quan; change, if given, edits the configuration.
func newJWKSServer(t *testing.T, source string, change func(*qhttp.JWKSConfig)) *testServer {
	t.Helper()
	return newServer(t, func(ts *testServer) {
		cfg := qhttp.JWKSConfig{Source: source, Issuer: idpIssuer, Audience: idpAudience, Now: ts.clock}
		if change != nil {
			change(&cfg)
		}
		j, err := qhttp.NewJWKS(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		ts.tokens.UseJWKS(j)
	})
}

// whoami returns the user id the server takes token for (GET
// /me/contact), or the problem's status.
func (ts *testServer) whoami(t *testing.T, token string) (int64, response) {
	t.Helper()
	r := ts.do(t, "GET", "/api/v1/me/contact", token, nil)
	if r.Status != http.StatusOK {
		return 0, r
	}
	var c quan.Contact
	r.decode(t, &c)
	return c.UserID, r
}

func (ts *testServer) wantUser(t *testing.T, token string, user int64) {
	t.Helper()
	if got, r := ts.whoami(t, token); got != user {
		t.Fatalf("token taken for user %d (%d %s), want %d", got, r.Status, r.Body, user)
	}
}

func (ts *testServer) wantRefused(t *testing.T, token, why string) {
	t.Helper()
	if _, r := ts.whoami(t, token); r.Status != http.StatusUnauthorized || r.Problem.Code != "unauthorized" {
		t.Fatalf("%s: got %d %s, want 401 unauthorized", why, r.Status, r.Body)
	}
}

// TestJWKSTokens: a shopper's token signed by the identity provider's
// key is taken for the user its sub names; tokens signed by another key,
// for another issuer or audience, unsigned, expired, or without a user id
// are refused, and so are HS256 tokens minted with the local secret.
func TestJWKSTokens(t *testing.T) {
	for _, alg := range []string{"RS256", "ES256"} {
		t.Run(alg, func(t *testing.T) {
			key := newIdPKey(t, alg, "k1")
			idp := newTestIdP(t, key)
			ts := newJWKSServer(t, idp.URL, nil)
			now := ts.clock()

			good := key.sign(t, shopper("42", now))
			ts.wantUser(t, good, 42)
			ts.wantUser(t, good, 42) // from the cache

			other := newIdPKey(t, alg, "other")
			ts.wantRefused(t, other.sign(t, shopper("42", now)), "another key, unknown kid")
			forged := other
			forged.kid = key.kid
			ts.wantRefused(t, forged.sign(t, shopper("42", now)), "another key under the published kid")

			bad := func(change func(jwt.MapClaims)) string {
				c := shopper("42", now)
				change(c)
				return key.sign(t, c)
			}
			ts.wantRefused(t, bad(func(c jwt.MapClaims) { c["iss"] = "https://evil.example" }), "wrong issuer")
			ts.wantRefused(t, bad(func(c jwt.MapClaims) { delete(c, "iss") }), "no issuer")
			ts.wantRefused(t, bad(func(c jwt.MapClaims) { c["aud"] = "another-app" }), "wrong audience")
			ts.wantRefused(t, bad(func(c jwt.MapClaims) { delete(c, "aud") }), "no audience")
			ts.wantRefused(t, bad(func(c jwt.MapClaims) { delete(c, "exp") }), "no expiry")
			ts.wantRefused(t, bad(func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Second).Unix() }), "expired")
			ts.wantRefused(t, bad(func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Minute).Unix() }), "not yet valid")
			for _, sub := range []any{"alice", "0", "-3", "007", "1.5", "99999999999999999999", true} {
				ts.wantRefused(t, bad(func(c jwt.MapClaims) { c["sub"] = sub }), "sub "+strings.TrimSpace(jsonOf(sub)))
			}
			ts.wantUser(t, bad(func(c jwt.MapClaims) { c["aud"] = []string{"crm", idpAudience} }), 42)

			// alg none: the payload of the good token, no signature.
			head := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT","kid":"k1"}`))
			payload := strings.Split(good, ".")[1]
			ts.wantRefused(t, head+"."+payload+".", "alg none")
			// The good token's signature on another payload: the cache
			// knows the good token, not its signature.
			evil := base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"` + idpIssuer + `","aud":"quan","sub":"7","exp":` + jsonOf(now.Add(time.Hour).Unix()) + `}`))
			parts := strings.Split(good, ".")
			ts.wantRefused(t, parts[0]+"."+evil+"."+parts[2], "payload swapped under a cached token's signature")
			// HS256 with the public key as the secret (the old confusion).
			hs := jwt.NewWithClaims(jwt.SigningMethodHS256, shopper("42", now))
			hs.Header["kid"] = "k1"
			s, err := hs.SignedString([]byte(jsonOf(key.jwk())))
			if err != nil {
				t.Fatal(err)
			}
			ts.wantRefused(t, s, "HS256 keyed with the public key")
			crit := jwt.NewWithClaims(jwt.GetSigningMethod(alg), shopper("42", now))
			crit.Header["kid"], crit.Header["crit"], crit.Header["exp-ext"] = "k1", []string{"exp-ext"}, true
			if s, err = crit.SignedString(key.priv); err != nil {
				t.Fatal(err)
			}
			ts.wantRefused(t, s, "a crit extension")
			ts.wantRefused(t, ts.user(t, 42), "HS256 minted with the local secret")

			// Expiry is checked again for a token the cache holds.
			ts.setNow(now.Add(time.Hour))
			ts.wantRefused(t, good, "the cached token once expired")
		})
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestJWKSMakesShoppersOnly: the provider's tokens make a user identity
// whatever role or shop they claim, so they never reach merchant or admin
// routes, nor settlement.
func TestJWKSMakesShoppersOnly(t *testing.T) {
	key := newIdPKey(t, "ES256", "k1")
	ts := newJWKSServer(t, newTestIdP(t, key).URL, nil)
	c := shopper("42", ts.clock())
	c["role"], c["shop"], c["uid"] = "admin", 1, "1"
	tok := key.sign(t, c)
	ts.wantUser(t, tok, 42)
	ts.do(t, "GET", "/api/v1/stats", tok, nil).want(t, http.StatusForbidden, "forbidden")
	ts.do(t, "GET", "/api/v1/users/7/contact", tok, nil).want(t, http.StatusForbidden, "forbidden")
}

// TestJWKSUserClaim: --jwt-user-claim names the claim with the user id,
// a JSON number or a string; sub is then not read.
func TestJWKSUserClaim(t *testing.T) {
	key := newIdPKey(t, "RS256", "k1")
	ts := newJWKSServer(t, newTestIdP(t, key).URL, func(c *qhttp.JWKSConfig) { c.UserClaim = "uid" })
	now := ts.clock()
	c := shopper("auth0|5f1e", now)
	c["uid"] = 9007199254740993 // above 2^53: read as a whole number, not a float
	ts.wantUser(t, key.sign(t, c), 9007199254740993)
	c["uid"] = "77"
	ts.wantUser(t, key.sign(t, c), 77)
	delete(c, "uid")
	ts.wantRefused(t, key.sign(t, c), "no uid claim")
}

// TestJWKSAllowHS256: with --jwt-allow-hs256, tokens minted with the
// local secret (quan token) go on working beside the provider's, and are
// counted apart, so the switch can be watched.
func TestJWKSAllowHS256(t *testing.T) {
	key := newIdPKey(t, "RS256", "k1")
	idp := newTestIdP(t, key)
	var mu sync.Mutex
	kinds := map[string]int{}
	ts := newJWKSServer(t, idp.URL, func(c *qhttp.JWKSConfig) { c.AllowHS256 = true })
	ts.tokens.Verified = func(kind string) {
		mu.Lock()
		defer mu.Unlock()
		kinds[kind]++
	}
	ts.wantUser(t, ts.user(t, 5), 5)
	ts.wantUser(t, key.sign(t, shopper("6", ts.clock())), 6)
	ts.wantUser(t, key.sign(t, shopper("6", ts.clock())), 6)
	ts.do(t, "GET", "/api/v1/templates", ts.merchant(t, 1), nil).want(t, http.StatusOK, "")
	ts.wantRefused(t, newIdPKey(t, "RS256", "other").sign(t, shopper("6", ts.clock())), "another key")
	mu.Lock()
	defer mu.Unlock()
	if kinds["hs256"] != 2 || kinds["jwks"] != 2 || len(kinds) != 2 {
		t.Fatalf("tokens verified by kind %v, want hs256 2, jwks 2", kinds)
	}
}

// TestJWKSRotation: a key the provider adds is read when a token names
// its kid (at most once every MinRefetch, so made-up kids do not hammer
// the provider); a key it withdraws stops verifying, tokens remembered
// from before included; and while the provider is down the keys read
// before go on serving.
func TestJWKSRotation(t *testing.T) {
	k1, k2 := newIdPKey(t, "RS256", "k1"), newIdPKey(t, "ES256", "k2")
	idp := newTestIdP(t, k1)
	ts := newJWKSServer(t, idp.URL, nil)
	start := ts.clock()
	old := k1.sign(t, shopper("1", start))
	ts.wantUser(t, old, 1)
	if n := idp.reads.Load(); n != 1 {
		t.Fatalf("%d reads of the key set at start, want 1", n)
	}

	idp.publish(k2) // k1 withdrawn, k2 added
	rotated := k2.sign(t, shopper("2", start))
	ts.wantRefused(t, rotated, "a new kid within MinRefetch of the last read")
	if n := idp.reads.Load(); n != 1 {
		t.Fatalf("%d reads after a new kid within MinRefetch of the start, want 1", n)
	}
	ts.setNow(start.Add(qhttp.DefaultJWKSRefetch))
	ts.wantUser(t, rotated, 2)
	if n := idp.reads.Load(); n != 2 {
		t.Fatalf("%d reads after a new kid, want 2", n)
	}
	ts.wantRefused(t, old, "a cached token of a withdrawn key")
	for i := range 20 {
		madeUp := k1
		madeUp.kid = "made-up-" + jsonOf(i)
		ts.wantRefused(t, madeUp.sign(t, shopper("1", start)), madeUp.kid)
	}
	if n := idp.reads.Load(); n != 2 {
		t.Fatalf("%d reads after 20 tokens of unknown kids within MinRefetch, want 2", n)
	}

	idp.setDown(true)
	ts.setNow(start.Add(2 * qhttp.DefaultJWKSRefetch))
	ts.wantRefused(t, newIdPKey(t, "ES256", "k3").sign(t, shopper("3", start)), "an unknown kid while the provider is down")
	if n := idp.reads.Load(); n != 3 {
		t.Fatalf("%d reads, want 3 (one attempt while down)", n)
	}
	ts.wantUser(t, rotated, 2)
	ts.wantUser(t, k2.sign(t, shopper("4", start)), 4)
}

// TestJWKSFile: a key set in a file is read again, as a URL is, when a
// token names a kid it lacks; its keys are refused when the file fails
// to parse at start.
func TestJWKSFile(t *testing.T) {
	k1, k2 := newIdPKey(t, "ES256", "k1"), newIdPKey(t, "RS256", "k2")
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, jwksJSON(k1), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := newJWKSServer(t, path, nil)
	start := ts.clock()
	ts.wantUser(t, k1.sign(t, shopper("1", start)), 1)
	if err := os.WriteFile(path, jwksJSON(k1, k2), 0o600); err != nil {
		t.Fatal(err)
	}
	ts.setNow(start.Add(qhttp.DefaultJWKSRefetch))
	ts.wantUser(t, k2.sign(t, shopper("2", start)), 2)
	ts.wantUser(t, k1.sign(t, shopper("1", start)), 1)
}

// TestNewJWKSRefuses: a configuration without issuer or audience, and a
// key set that cannot be read or holds no usable key, fail at start.
func TestNewJWKSRefuses(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", string(jwksJSON(newIdPKey(t, "ES256", "k1"))))
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	b64 := base64.RawURLEncoding.EncodeToString
	for name, cfg := range map[string]qhttp.JWKSConfig{
		"NoIssuer":      {Source: good, Audience: idpAudience},
		"NoAudience":    {Source: good, Issuer: idpIssuer},
		"NoSource":      {Issuer: idpIssuer, Audience: idpAudience},
		"Missing":       {Source: filepath.Join(dir, "none.json"), Issuer: idpIssuer, Audience: idpAudience},
		"NotJSON":       {Source: write("bad.json", "keys"), Issuer: idpIssuer, Audience: idpAudience},
		"NoKeys":        {Source: write("empty.json", `{"keys":[]}`), Issuer: idpIssuer, Audience: idpAudience},
		"SmallRSA":      {Source: write("small.json", `{"keys":[{"kty":"RSA","kid":"s","n":"`+b64(small.N.Bytes())+`","e":"AQAB"}]}`), Issuer: idpIssuer, Audience: idpAudience},
		"OffCurve":      {Source: write("off.json", `{"keys":[{"kty":"EC","crv":"P-256","kid":"o","x":"`+b64(make([]byte, 32))+`","y":"`+b64(make([]byte, 32))+`"}]}`), Issuer: idpIssuer, Audience: idpAudience},
		"SymmetricOnly": {Source: write("oct.json", `{"keys":[{"kty":"oct","kid":"h","k":"c2VjcmV0"}]}`), Issuer: idpIssuer, Audience: idpAudience},
		"Unreachable":   {Source: "http://127.0.0.1:1/jwks.json", Issuer: idpIssuer, Audience: idpAudience},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := qhttp.NewJWKS(context.Background(), cfg); err == nil {
				t.Fatal("NewJWKS took it")
			}
		})
	}
}

// TestJWKSRunRefreshes: Run reads the key set again every RefreshEvery,
// so a withdrawn key stops verifying without a token naming a new kid.
func TestJWKSRunRefreshes(t *testing.T) {
	k1, k2 := newIdPKey(t, "ES256", "k1"), newIdPKey(t, "ES256", "k2")
	idp := newTestIdP(t, k1)
	var j *qhttp.JWKS
	ts := newServer(t, func(ts *testServer) {
		var err error
		j, err = qhttp.NewJWKS(context.Background(), qhttp.JWKSConfig{Source: idp.URL, Issuer: idpIssuer, Audience: idpAudience,
			Now: ts.clock, RefreshEvery: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		ts.tokens.UseJWKS(j)
	})
	tok := k1.sign(t, shopper("1", ts.clock()))
	ts.wantUser(t, tok, 1)
	idp.publish(k2)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- j.Run(ctx) }()
	defer func() { cancel(); <-done }()
	// Refreshes run on a real ticker: wait for one after the change.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, r := ts.whoami(t, tok); r.Status == http.StatusUnauthorized {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the withdrawn key still verifies after %d reads of the key set", j.Reads())
		}
	}
}
