package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/quanhq/quan/cmd/quan/internal/cli"
)

// idpFile writes the JWKS of a new P-256 key with kid k1 and returns the
// file and a function that signs a shopper token for user with it.
func idpFile(t *testing.T) (string, func(user string) string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := key.PublicKey.Bytes()
	b64 := base64.RawURLEncoding.EncodeToString
	set, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{
		"kty": "EC", "crv": "P-256", "kid": "k1", "x": b64(pub[1:33]), "y": b64(pub[33:])}}})
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, set, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, func(user string) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{"iss": "https://id.example", "aud": "quan",
			"sub": user, "exp": time.Now().Add(time.Hour).Unix()})
		tok.Header["kid"] = "k1"
		s, err := tok.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// whoami is GET /api/v1/me/contact with token: its status and body.
func whoami(t *testing.T, base, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/api/v1/me/contact", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestServeJWKS: quan serve with --jwt-jwks (here from QUAN_JWT_*
// variables) takes the identity provider's tokens; with
// --jwt-allow-hs256 those of quan token too, each counted by kind in
// quan_tokens_verified_total; without it HS256 tokens are refused.
func TestServeJWKS(t *testing.T) {
	path, sign := idpFile(t)
	env := testEnv(t)
	env["QUAN_JWT_JWKS"], env["QUAN_JWT_ISSUER"], env["QUAN_JWT_AUDIENCE"] = path, "https://id.example", "quan"
	hs := strings.TrimSpace(runQuan(t, env, "token --role user --user 5"))

	during := startServe(t, env, "--jwt-allow-hs256")
	if code, body := whoami(t, during.URL(), sign("42")); code != 200 || !strings.Contains(body, `"userId":42`) {
		t.Fatalf("the provider's token: %d %s", code, body)
	}
	if code, body := whoami(t, during.URL(), hs); code != 200 || !strings.Contains(body, `"userId":5`) {
		t.Fatalf("quan token's with --jwt-allow-hs256: %d %s", code, body)
	}
	whoami(t, during.URL(), sign("43"))
	mfs := scrape(t, during.AdminURL())
	for kind, want := range map[string]float64{"jwks": 2, "hs256": 1} {
		if v, _ := metric(mfs, "quan_tokens_verified_total", "kind", kind); v != want {
			t.Errorf("quan_tokens_verified_total{kind=%q} %v, want %v", kind, v, want)
		}
	}
	if err := during.Close(); err != nil {
		t.Fatal(err)
	}

	after := startServe(t, env)
	if code, body := whoami(t, after.URL(), hs); code != 401 || !strings.Contains(body, "HS256") {
		t.Fatalf("quan token's without --jwt-allow-hs256: %d %s, want 401 naming HS256", code, body)
	}
	if code, _ := whoami(t, after.URL(), sign("42")); code != 200 {
		t.Fatalf("the provider's token: %d", code)
	}
}

// TestServeJWKSFlags: the provider's flags go together; a key set that
// cannot be read stops the start.
func TestServeJWKSFlags(t *testing.T) {
	path, _ := idpFile(t)
	for _, args := range [][]string{
		{"--jwt-jwks", path, "--jwt-audience", "quan"},
		{"--jwt-jwks", path, "--jwt-issuer", "https://id.example"},
		{"--jwt-issuer", "https://id.example"},
		{"--jwt-allow-hs256"},
		{"--jwt-user-claim", "uid"},
	} {
		m := &Main{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" }}
		err := (&ServeCommand{Main: m}).ParseFlags(args)
		if ue := (*cli.UsageError)(nil); !errors.As(err, &ue) {
			t.Errorf("serve %s: %v, want a usage error", strings.Join(args, " "), err)
		}
	}
	env := testEnv(t)
	m := &Main{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(k string) string { return env[k] }}
	cmd := &ServeCommand{Main: m}
	if err := cmd.ParseFlags([]string{"--jwt-jwks", filepath.Join(t.TempDir(), "none.json"), "--jwt-issuer", "i", "--jwt-audience", "a"}); err != nil {
		t.Fatal(err)
	}
	err := cmd.Open(t.Context())
	cmd.Close()
	if err == nil || !strings.Contains(err.Error(), "jwks") {
		t.Fatalf("open with a missing key set: %v, want an error naming jwks", err)
	}
}
