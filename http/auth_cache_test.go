package http

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/quanhq/quan"
)

var cacheSecret = []byte("0123456789abcdef0123456789abcdef")

// testClock is a clock tests move by hand, safe for concurrent reads.
type testClock struct{ ns atomic.Int64 }

func newTestClock() *testClock {
	c := &testClock{}
	c.set(time.Date(2025, 11, 11, 0, 0, 0, 0, time.UTC)) // a whole second: exp lands on one too
	return c
}

func (c *testClock) now() time.Time      { return time.Unix(0, c.ns.Load()).UTC() }
func (c *testClock) set(t time.Time)     { c.ns.Store(t.UnixNano()) }
func (c *testClock) add(d time.Duration) { c.ns.Add(int64(d)) }

func newCachingTokens(t testing.TB, clock *testClock, slots int) *Tokens {
	t.Helper()
	tk, err := NewTokens(cacheSecret, clock.now)
	if err != nil {
		t.Fatal(err)
	}
	tk.cache = newTokenCache(slots)
	return tk
}

func mint(t testing.TB, tk *Tokens, id quan.Identity, ttl time.Duration) string {
	t.Helper()
	s, err := tk.Mint(id, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func user(n int64) quan.Identity { return quan.Identity{Role: quan.RoleUser, UserID: n} }

// cached reports whether tk answers token from its cache at now. A token
// with Mint's header is looked up by its HMAC once that matches its
// signature, any other by its SHA-256 (see verifyMinted).
func cached(tk *Tokens, token string, now time.Time) bool {
	sum := sha256.Sum256([]byte(token))
	if rest, ok := strings.CutPrefix(token, mintedHeader+"."); ok {
		payload, sig, _ := strings.Cut(rest, ".")
		mac := hmac.New(sha256.New, tk.secret)
		mac.Write([]byte(mintedHeader + "." + payload))
		mac.Sum(sum[:0])
		if base64.RawURLEncoding.EncodeToString(sum[:]) != sig {
			return false // refused before the cache is looked at
		}
	}
	_, ok := tk.cache.get(&sum, now)
	return ok
}

func wantUnauthorized(t *testing.T, tk *Tokens, token, why string) {
	t.Helper()
	id, err := tk.Verify(token)
	if quan.ErrorCode(err) != quan.EUNAUTHORIZED {
		t.Fatalf("%s: Verify = %+v, %v; want EUNAUTHORIZED", why, id, err)
	}
}

func TestTokenCacheAnswersTheSameIdentity(t *testing.T) {
	clock := newTestClock()
	tk := newCachingTokens(t, clock, 64)
	for _, id := range []quan.Identity{
		user(7),
		{Role: quan.RoleMerchant, ShopNo: 42, Subject: "shop-42-admin"},
		{Role: quan.RoleAdmin, Subject: "ops"},
	} {
		tok := mint(t, tk, id, time.Hour)
		first, err := tk.Verify(tok)
		if err != nil {
			t.Fatal(err)
		}
		if !cached(tk, tok, clock.now()) {
			t.Fatalf("%v: not cached after a verification", id)
		}
		again, err := tk.Verify(tok)
		if err != nil || again != first {
			t.Fatalf("%v: from the cache %+v, %v; parsed %+v", id, again, err, first)
		}
	}
}

func TestTokenCacheExpiredRefused(t *testing.T) {
	clock := newTestClock()
	tk := newCachingTokens(t, clock, 64)
	start := clock.now()
	tok := mint(t, tk, user(1), time.Minute)
	if _, err := tk.Verify(tok); err != nil {
		t.Fatal(err)
	}
	clock.set(start.Add(time.Minute - time.Nanosecond))
	if !cached(tk, tok, clock.now()) {
		t.Fatal("not cached a nanosecond before its exp")
	}
	if _, err := tk.Verify(tok); err != nil {
		t.Fatalf("a nanosecond before its exp: %v", err)
	}
	clock.set(start.Add(time.Minute)) // exp itself: jwt refuses it
	if cached(tk, tok, clock.now()) {
		t.Fatal("the cache answers a token at its exp")
	}
	_, err := tk.Verify(tok)
	var qe *quan.Error
	if !errors.As(err, &qe) || qe.Code != quan.EUNAUTHORIZED || !strings.Contains(qe.Message, "expired") {
		t.Fatalf("at its exp: %v; want EUNAUTHORIZED, expired", err)
	}
	clock.add(time.Hour)
	wantUnauthorized(t, tk, tok, "an hour after its exp")
}

func TestTokenCacheNotBefore(t *testing.T) {
	clock := newTestClock()
	tk := newCachingTokens(t, clock, 64)
	start := clock.now()
	c := jwtClaims{Role: quan.RoleUser, UserID: 3, RegisteredClaims: jwt.RegisteredClaims{
		Issuer: tokenIssuer, Subject: "user:3",
		NotBefore: jwt.NewNumericDate(start), ExpiresAt: jwt.NewNumericDate(start.Add(time.Hour)),
	}}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(cacheSecret)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tk.Verify(tok); err != nil {
		t.Fatal(err)
	}
	clock.add(-time.Second) // a clock set back: before nbf, Verify refuses
	wantUnauthorized(t, tk, tok, "before its nbf")
}

func TestTokenCacheTamperedRefused(t *testing.T) {
	clock := newTestClock()
	tk := newCachingTokens(t, clock, 1) // every token looks in the genuine one's slot
	tok := mint(t, tk, user(1), time.Hour)
	if _, err := tk.Verify(tok); err != nil {
		t.Fatal(err)
	}
	if !cached(tk, tok, clock.now()) {
		t.Fatal("the genuine token is not cached")
	}
	head, rest, _ := strings.Cut(tok, ".")
	payload, sig, _ := strings.Cut(rest, ".")
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		t.Fatal(err)
	}
	other := base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(raw), `"uid":"1"`, `"uid":"2"`, 1)))
	if other == payload {
		t.Fatalf("payload %s has no uid to change", raw)
	}
	flip := func(s string, i int) string {
		b := []byte(s)
		b[i] ^= 1
		return string(b)
	}
	foreign, err := NewTokens([]byte("another secret of thirty-two bytes or more"), clock.now)
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]string{
		"AnotherUser":     head + "." + other + "." + sig,
		"SignatureFlip":   head + "." + payload + "." + flip(sig, 3),
		"PayloadFlip":     head + "." + flip(payload, len(payload)/2) + "." + sig,
		"Truncated":       tok[:len(tok)-1],
		"Extended":        tok + "A",
		"NoSignature":     head + "." + payload + ".",
		"AnotherSecret":   mint(t, foreign, user(1), time.Hour),
		"GenuineWithDots": tok + ".",
	} {
		t.Run(name, func(t *testing.T) {
			for range 2 { // and refused again: a failure is not remembered
				wantUnauthorized(t, tk, bad, name)
			}
			if cached(tk, bad, clock.now()) {
				t.Fatal("a refused token is in the cache")
			}
		})
	}
	if !cached(tk, tok, clock.now()) {
		t.Fatal("refused tokens evicted the genuine one")
	}
}

func TestTokenCacheBounded(t *testing.T) {
	clock := newTestClock()
	const slots = 8
	tk := newCachingTokens(t, clock, slots)
	toks := make([]string, 500)
	for i := range toks {
		toks[i] = mint(t, tk, user(int64(i)+1), time.Hour)
		if _, err := tk.Verify(toks[i]); err != nil {
			t.Fatal(err)
		}
	}
	held := 0
	for i := range tk.cache.slots {
		if tk.cache.slots[i].Load() != nil {
			held++
		}
	}
	if held > slots || len(tk.cache.slots) != slots {
		t.Fatalf("%d entries in %d slots after 500 distinct tokens; want at most %d", held, len(tk.cache.slots), slots)
	}
	// Evicted or not, every token still verifies as itself.
	for i, tok := range toks {
		id, err := tk.Verify(tok)
		if err != nil || id.UserID != int64(i)+1 {
			t.Fatalf("token %d: %+v, %v", i, id, err)
		}
	}
	// A flood of garbage evicts nothing.
	last := toks[len(toks)-1]
	for i := range 1000 {
		wantUnauthorized(t, tk, fmt.Sprintf("%s.%d", last[:len(last)-4], i), "garbage")
	}
	if !cached(tk, last, clock.now()) {
		t.Fatal("garbage evicted a verified token")
	}
}

func TestTokenCacheConcurrent(t *testing.T) {
	clock := newTestClock()
	tk := newCachingTokens(t, clock, 4) // fewer slots than tokens: evictions race with reads
	start := clock.now()
	const n = 16
	toks := make([]string, n)
	for i := range toks {
		// Tokens of odd users expire after a minute, of even ones after a day.
		ttl := 24 * time.Hour
		if i%2 == 1 {
			ttl = time.Minute
		}
		toks[i] = mint(t, tk, user(int64(i)+1), ttl)
	}
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Go(func() {
			for k := range 300 {
				i := (g + k) % n
				if g == 0 && k == 150 {
					clock.set(start.Add(time.Minute)) // the odd ones expire mid-run
				}
				id, err := tk.Verify(toks[i])
				switch {
				case err == nil && id.UserID != int64(i)+1:
					t.Errorf("token of user %d answered as %+v", i+1, id)
				case err != nil && (i%2 == 0 || quan.ErrorCode(err) != quan.EUNAUTHORIZED):
					t.Errorf("token of user %d: %v", i+1, err)
				}
			}
		})
	}
	wg.Wait()
	// The clock has moved past the odd ones' exp: all of them are refused.
	for i := 1; i < n; i += 2 {
		wantUnauthorized(t, tk, toks[i], "after the clock moved")
	}
}

// BenchmarkVerify compares a verification from the cache with a full one
// (parse, HMAC, JSON). Fresh is a flash sale's case: each token is new to
// the cache (of one slot), looked up in vain and put in. The parallel ones
// share one Tokens, as the server's connections do.
func BenchmarkVerify(b *testing.B) {
	clock := newTestClock()
	toks := make([]string, 1000)
	for _, bc := range []struct {
		name  string
		slots int
	}{{"Uncached", 0}, {"Fresh", 1}, {"Cached", tokenCacheSlots}} {
		tk := newCachingTokens(b, clock, max(bc.slots, 1))
		if bc.slots == 0 {
			tk.cache = nil
		}
		for i := range toks {
			toks[i] = mint(b, tk, user(int64(i)+1), time.Hour)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := tk.Verify(toks[i%len(toks)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run(bc.name+"Parallel", func(b *testing.B) {
			b.ReportAllocs()
			var seq atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				i := int(seq.Add(1)) * 97
				for pb.Next() {
					if _, err := tk.Verify(toks[i%len(toks)]); err != nil {
						b.Error(err)
						return
					}
					i++
				}
			})
		})
	}
}
