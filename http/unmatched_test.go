package http

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/claims"
	"github.com/quanhq/quan/codes"
	"github.com/quanhq/quan/tasks"
	"github.com/quanhq/quan/templates"
	"github.com/quanhq/quan/wallet"
)

// unmatchedTwice is unmatchedAsProblem as it was, matching every request
// twice: what Handler must answer like.
func (s *Server) unmatchedTwice(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		probe := &allowRecorder{header: http.Header{}}
		mux.ServeHTTP(probe, r)
		switch probe.status {
		case http.StatusMethodNotAllowed:
			w.Header().Set("Allow", probe.header.Get("Allow"))
			s.writeError(w, r, quan.Errorf(codeMethodNotAllowed, "%s is not allowed on %s", r.Method, r.URL.Path))
		case http.StatusNotFound:
			s.writeError(w, r, quan.Errorf(quan.ENOTFOUND, "no route %s %s", r.Method, r.URL.Path))
		default:
			for k, v := range probe.header {
				w.Header()[k] = v
			}
			w.WriteHeader(probe.status)
		}
	})
}

// TestHandlerRoutesAsBefore: Handler, which matches a request once,
// answers every method on every kind of path (routed, unrouted, to
// redirect, with a trailing slash, escaped, "*") byte for byte as the
// handler that matched it twice.
func TestHandlerRoutesAsBefore(t *testing.T) {
	clock := newTestClock()
	tk := newCachingTokens(t, clock, 64)
	s := &Server{
		Templates: &templates.Service{},
		Tasks:     &tasks.Service{},
		Claims:    &claims.Service{},
		Wallet:    &wallet.Service{},
		Codes:     &codes.Service{},
		Tokens:    tk,
		Now:       clock.now,
	}
	now := s.Handler()
	_, routes := s.muxes()
	before := s.accessLog(s.recoverer(s.authenticate(s.idempotent(s.unmatchedTwice(routes)))))

	paths := []string{
		"/healthz", "/healthz/", "/healthz?x=1", "/readyz", "/api/v1/openapi.json",
		"/api/v1/templates", "/api/v1/templates/", "/api/v1/templates/7", "/api/v1/templates/abc",
		"/api/v1/templates/7/claim", "/api/v1/templates/7/claim/", "/api/v1/templates/7/claim?wait=1s",
		"/api/v1/claims/x", "/api/v1/tasks/3/failures.xlsx", "/api/v1/code-batches/1/codes.csv",
		"/api/v1/orders/o-1/lock", "/api/v1/me/coupons",
		"/", "/nowhere", "/api", "/api/v1", "/api/v1/", "/api/v1/templates/7/nothing",
		"//healthz", "/api/v1/../healthz", "/api/v1/./templates/7", "/api//v1/templates/7/claim",
		"/api/v1/templates/7/claim/..", "/a/../nowhere", "//nowhere", "/nowhere/./", "/nowhere//?q=1",
		"/api/v1/templates/%2F/claim", "/api/v1/templates/7%2Fclaim", "/api/v1/templates/x%20y",
		"/%68ealthz", "/api/v1/templates/%37",
	}
	methods := []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"}
	tokens := []string{"", mint(t, tk, user(5), time.Hour)}
	n := 0
	for _, m := range methods {
		for _, p := range paths {
			for _, tok := range tokens {
				want, got := serve(before, m, p, tok), serve(now, m, p, tok)
				if got.Code != want.Code || !reflect.DeepEqual(got.Header(), want.Header()) || !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
					t.Errorf("%s %s (token %t):\n got %d %v %q\nwant %d %v %q", m, p, tok != "",
						got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
				}
				n++
			}
		}
	}
	// "OPTIONS *", which a mux answers 400.
	want, got := serve(before, "OPTIONS", "*", ""), serve(now, "OPTIONS", "*", "")
	if got.Code != want.Code || !reflect.DeepEqual(got.Header(), want.Header()) {
		t.Errorf("OPTIONS *: got %d %v, want %d %v", got.Code, got.Header(), want.Code, want.Header())
	}
	t.Logf("%d requests alike", n+1)
}

func serve(h http.Handler, method, target, token string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	r.Header.Set("X-Request-ID", "same-in-both") // else each gets a random one
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}
