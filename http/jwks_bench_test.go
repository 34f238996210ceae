package http

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
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// BenchmarkVerifyKinds is the cost of verifying one bearer token by its
// kind: hs256 (minted with the local secret), rs256 and es256 (the
// identity provider's, against its JWKS), each uncached (every token
// verified in full: a cache of one slot, 1000 tokens in turn) and cached
// (the same 1000 tokens seen again, as a shopper's app sends its token
// with each request).
func BenchmarkVerifyKinds(b *testing.B) {
	clock := newTestClock()
	const n = 1000
	for _, kind := range []string{"hs256", "rs256", "es256"} {
		for _, cached := range []bool{false, true} {
			name := kind + "/Uncached"
			if cached {
				name = kind + "/Cached"
			}
			// The keys and tokens are made inside the sub-benchmark, so
			// that -bench picking one makes no RSA key for the others;
			// b.Loop times only the loop.
			b.Run(name, func(b *testing.B) {
				slots, idpSlots := 1, idpWays // 1000 tokens in turn through one slot, one set: each evicts another
				if cached {
					slots, idpSlots = tokenCacheSlots, jwksCacheSlots
				}
				tk := newCachingTokens(b, clock, slots)
				toks := make([]string, n)
				if kind == "hs256" {
					for i := range toks {
						toks[i] = mint(b, tk, user(int64(i)+1), time.Hour)
					}
				} else {
					j, sign := benchIdP(b, kind, clock.now)
					j.keys.Load().cache = newIDPCache(idpSlots)
					tk.UseJWKS(j)
					for i := range toks {
						toks[i] = sign(strconv.Itoa(i + 1))
					}
				}
				if cached {
					for _, tok := range toks {
						if _, err := tk.Verify(tok); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if _, err := tk.Verify(toks[i%n]); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}

// benchIdP returns a JWKS holding a new key of kind (rs256: RSA 2048,
// es256: P-256) and a function signing a shopper's token with it.
func benchIdP(b *testing.B, kind string, now func() time.Time) (*JWKS, func(sub string) string) {
	b.Helper()
	var priv crypto.Signer
	var jwk map[string]any
	var method jwt.SigningMethod
	enc := base64.RawURLEncoding.EncodeToString
	var err error
	switch kind {
	case "rs256":
		var k *rsa.PrivateKey
		k, err = rsa.GenerateKey(rand.Reader, 2048)
		if err == nil {
			priv, method = k, jwt.SigningMethodRS256
			jwk = map[string]any{"kty": "RSA", "kid": "k", "n": enc(k.N.Bytes()), "e": enc(big.NewInt(int64(k.E)).Bytes())}
		}
	case "es256":
		var k *ecdsa.PrivateKey
		k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err == nil {
			priv, method = k, jwt.SigningMethodES256
			p, _ := k.PublicKey.Bytes()
			jwk = map[string]any{"kty": "EC", "crv": "P-256", "kid": "k", "x": enc(p[1:33]), "y": enc(p[33:])}
		}
	}
	if err != nil {
		b.Fatal(err)
	}
	set, _ := json.Marshal(map[string]any{"keys": []any{jwk}})
	path := filepath.Join(b.TempDir(), "jwks.json")
	if err := os.WriteFile(path, set, 0o600); err != nil {
		b.Fatal(err)
	}
	j, err := NewJWKS(context.Background(), JWKSConfig{Source: path, Issuer: "https://id.example", Audience: "quan", Now: now})
	if err != nil {
		b.Fatal(err)
	}
	return j, func(sub string) string {
		t := jwt.NewWithClaims(method, jwt.MapClaims{"iss": "https://id.example", "aud": "quan", "sub": sub,
			"iat": now().Unix(), "exp": now().Add(time.Hour).Unix()})
		t.Header["kid"] = "k"
		s, err := t.SignedString(priv)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
}
