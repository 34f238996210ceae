package http

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
)

// Drain is a process's readiness switch for shutdown. Once Start is
// called, every /readyz that shares it answers 503 {"status":"draining"}
// (the API's and the admin listener's), so that load balancers stop
// sending requests, while the requests that still come are served as
// ever. The zero value is ready; a nil *Drain never drains.
type Drain struct{ on atomic.Bool }

// Start makes readiness fail from now on. It is safe to call twice.
func (d *Drain) Start() { d.on.Store(true) }

// Draining reports whether Start was called.
func (d *Drain) Draining() bool { return d != nil && d.on.Load() }

// Ready answers 503 draining once Start was called, else as next.
func (d *Drain) Ready(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.Draining() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			json.NewEncoder(w).Encode(map[string]string{"status": "draining"})
			return
		}
		next.ServeHTTP(w, r)
	})
}
