package http

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/apikeys"
	"github.com/quanhq/quan/sqlite"
)

// BenchmarkAuthenticate is what authenticating one request costs, by the
// middleware alone: an HS256 token seen before (answered from the token
// cache after its HMAC), an HS256 token never seen (parsed and checked
// in full), and a service key seen before (its HMAC, then the key cache).
// Run: go test ./http -run '^$' -bench Authenticate -benchmem.
func BenchmarkAuthenticate(b *testing.B) {
	clock := newTestClock()
	tk := newCachingTokens(b, clock, tokenCacheSlots)
	db, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "quan.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	st := sqlite.NewStore(db)
	keys := &apikeys.Service{Keys: st, Secrets: st, Now: clock.now}
	_, key, err := keys.Create(b.Context(), quan.Identity{Role: quan.RoleAdmin}, apikeys.NewKey{Name: "orders", Scopes: []quan.KeyScope{quan.ScopeSettlement}})
	if err != nil {
		b.Fatal(err)
	}
	s := &Server{Tokens: tk, Keys: keys, Now: clock.now}
	var seen quan.Identity
	h := s.authenticate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = quan.IdentityFromContext(r.Context()) }))
	mint := func(n int64) string {
		tok, err := tk.Mint(user(n), 24*60*60*1e9)
		if err != nil {
			b.Fatal(err)
		}
		return "Bearer " + tok
	}
	fresh := make([]string, 1<<14)
	for i := range fresh {
		fresh[i] = mint(int64(i) + 1)
	}
	for _, bc := range []struct {
		name   string
		header func(i int) string
		role   quan.Role
	}{
		{"HS256Seen", func(int) string { return fresh[0] }, quan.RoleUser},
		{"HS256Fresh", func(i int) string { return fresh[i%len(fresh)] }, quan.RoleUser},
		{"KeySeen", func(int) string { return "Bearer " + key }, quan.RoleService},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", "/api/v1/me/coupons", nil)
			w := httptest.NewRecorder()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if bc.name == "HS256Fresh" && i > 0 && i%len(fresh) == 0 {
					b.StopTimer()
					tk.cache = newTokenCache(tokenCacheSlots) // never seen again
					b.StartTimer()
				}
				req.Header.Set("Authorization", bc.header(i))
				h.ServeHTTP(w, req)
				i++
			}
			if seen.Role != bc.role {
				b.Fatalf("authenticated as %+v", seen)
			}
		})
	}
}
