package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/quanhq/quan/cmd/quan/internal/app"
	qhttp "github.com/quanhq/quan/http"
)

// adminServer is the listener of `quan serve` and `quan worker` for the
// people who run them: Prometheus metrics, health and readiness probes,
// and Go's profiler, which must not be on the API's listener.
type adminServer struct {
	ln  net.Listener
	srv *http.Server
}

// openAdmin serves a's metrics, probes and profiler on addr.
// Its /readyz fails once drain starts.
func openAdmin(addr string, a *app.App, drain *qhttp.Drain, logger *slog.Logger) (*adminServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--admin-addr %s: %w (give each process on a host its own --admin-addr, or \"\" for none)", addr, err)
	}
	mux := http.NewServeMux()
	if a.Metrics != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(a.Metrics, promhttp.HandlerOpts{}))
	} else {
		mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "metrics are off (--metrics=false)", http.StatusNotFound)
		})
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
	mux.Handle("GET /readyz", drain.Ready(qhttp.ReadyHandler(a.Checks(), logger)))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	s := &adminServer{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("admin listener stopped", "err", err)
		}
	}()
	return s, nil
}

// URL is the admin listener's base URL.
func (s *adminServer) URL() string { return "http://" + s.ln.Addr().String() }

// Close stops the listener within ctx.
func (s *adminServer) Close(ctx context.Context) error { return s.srv.Shutdown(ctx) }
