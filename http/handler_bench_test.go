package http

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/claims"
	"github.com/quanhq/quan/templates"
)

// BenchmarkHandler sends requests through Server.Handler, every middleware
// included, each with another caller's token as in a flash sale (the token
// cache, of one slot here, never answers). The routes' own work is next to nothing:
// what is measured is the HTTP layer a claim pays for.
func BenchmarkHandler(b *testing.B) {
	clock := newTestClock()
	tk := newCachingTokens(b, clock, 1) // one slot: each token evicts the last, none is answered from it
	s := &Server{
		Templates: &templates.Service{},
		Claims:    &claims.Service{}, // refuses merchants before it needs anything
		Tokens:    tk,
		Now:       clock.now,
	}
	h := s.Handler()
	for _, bc := range []struct {
		name, method, path string
		who                func(n int64) quan.Identity
		status             int
	}{
		{"Healthz", "GET", "/healthz", user, http.StatusOK},
		{"ClaimRefused", "POST", "/api/v1/templates/7/claim", merchant, http.StatusForbidden},
		{"NotFound", "GET", "/api/v1/nowhere", user, http.StatusNotFound},
		{"MethodNotAllowed", "DELETE", "/api/v1/templates/7/claim", user, http.StatusMethodNotAllowed},
	} {
		reqs := make([]*http.Request, 4096)
		for i := range reqs {
			reqs[i] = httptest.NewRequest(bc.method, bc.path, nil)
			reqs[i].Header.Set("Authorization", "Bearer "+mint(b, tk, bc.who(int64(i)+1), time.Hour))
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, reqs[i%len(reqs)])
				if w.Code != bc.status {
					b.Fatalf("status %d, want %d: %s", w.Code, bc.status, w.Body)
				}
				i++
			}
		})
	}
}

func merchant(n int64) quan.Identity { return quan.Identity{Role: quan.RoleMerchant, ShopNo: n} }

// BenchmarkWriteJSON writes the 202 of an accepted claim.
func BenchmarkWriteJSON(b *testing.B) {
	s := &Server{}
	c := &quan.Claim{ID: "7-42-abcdefghijklmnop", TemplateID: 7, UserID: 42, Status: quan.ClaimPending,
		At: time.Date(2026, 11, 11, 0, 0, 0, 123456789, time.UTC)}
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		w.Body.Reset()
		s.writeJSON(w, http.StatusAccepted, c)
	}
}
