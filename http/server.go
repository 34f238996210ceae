// Package http serves quan's JSON API under /api/v1, with bearer-token
// identity, RFC 9457 problem errors and an OpenAPI document.
package http

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/apikeys"
	"github.com/quanhq/quan/claims"
	"github.com/quanhq/quan/codes"
	"github.com/quanhq/quan/facts"
	"github.com/quanhq/quan/notify"
	"github.com/quanhq/quan/shops"
	"github.com/quanhq/quan/stats"
	"github.com/quanhq/quan/tasks"
	"github.com/quanhq/quan/templates"
	"github.com/quanhq/quan/wallet"
)

// Server is quan's HTTP API. Set the fields, then Open; Close drains.
type Server struct {
	Templates *templates.Service
	Tasks     *tasks.Service  // nil serves no task routes
	Claims    *claims.Service // nil serves no claim routes
	// Centre serves the claim centre (/me/claimable): the claims'
	// service, which holds the checks a claim passes; it needs none of
	// the bus. nil serves no claim centre.
	Centre *claims.Service
	Wallet *wallet.Service // nil serves no wallet and order routes
	// Staff, if set, serves the shop's coupon search, history and
	// revocation (customer service).
	Staff     *wallet.Staff
	Codes     *codes.Service    // nil serves no code routes
	Notices   *notify.Service   // nil serves no inbox, popup and contact routes
	Stats     *stats.Service    // nil serves no statistics routes
	Reminders *notify.Reminders // nil serves no reminder routes
	// Facts serves users' facts for rules (the API calls them
	// attributes); nil serves no attribute routes.
	Facts *facts.Service
	// Shops serves shops' settings; nil serves no shop routes.
	Shops *shops.Service
	// Keys checks the service keys requests bear and serves the admins'
	// key routes; nil refuses every service key and serves no key routes.
	Keys *apikeys.Service
	// CodesExport writes the codes.xlsx export of a batch; nil serves
	// codes.csv only.
	CodesExport quan.CodesExport
	// NotificationFailuresExport writes the notifications/failures.xlsx
	// of a task; nil serves failures.csv only.
	NotificationFailuresExport quan.NotificationFailuresExport
	// Console, if set, serves the operator console at /console (package
	// console): its own pages and sign-in, beside the API.
	Console http.Handler
	// OnShutdown, if set, is called as Close begins, to end the responses
	// that would outlive it: the console's live streams.
	OnShutdown func()
	// Idempotency keeps responses by Idempotency-Key for every POST; nil
	// ignores the header.
	Idempotency quan.Idempotency
	Tokens      *Tokens
	Now         quan.Clock   // nil means time.Now
	Logger      *slog.Logger // nil discards

	// Checks are the dependencies /readyz checks, by name ("store",
	// "cache", "bus"): each returns nil when its dependency answers.
	Checks map[string]func(ctx context.Context) error
	// Drain, once started, fails /readyz with 503 draining; nil never.
	Drain *Drain

	// Observe, if set, is called as each request ends with its route
	// pattern ("unmatched" if no route took it), its status and how long
	// it took: the hook of the request metrics (prom.HTTP.Observe).
	Observe func(route string, status int, took time.Duration)
	// Unavailable, if set, is called as a request answered 503 because a
	// backend was down ends, with the backend ("store", "cache", "bus"):
	// the hook of prom.HTTP.Unavailable.
	Unavailable func(backend string)

	// Tracer, if set, traces every request (the tracing package's, on
	// OpenTelemetry); nil traces nothing.
	Tracer Tracer

	// Limits bound what slow, idle and too many clients may hold; the
	// zero value takes every default. Handler paces request bodies by
	// them; Open applies the rest to the connections.
	Limits Limits

	ln     net.Listener
	srv    *http.Server
	routes []string
}

// Tracer traces the API's requests.
type Tracer interface {
	// Handler wraps the whole API, so that a request's span covers its
	// authentication and the rest.
	Handler(next http.Handler) http.Handler
	// Route tells the span of r's request the route pattern it matched.
	Route(r *http.Request, pattern string)
}

// maxBody bounds a JSON request body.
const maxBody = 1 << 20

// Handler returns the API's handler, for tests and embedding.
func (s *Server) Handler() http.Handler {
	mux, routes := s.muxes()
	h := s.accessLog(s.recoverer(s.authenticate(s.idempotent(s.unmatchedAsProblem(mux, routes)))))
	if s.Tracer != nil {
		h = s.Tracer.Handler(h)
	}
	return s.pacedBodies(h)
}

// muxes returns two muxes of the API's routes: routes has only them, and
// mux has them and "/" for whatever they do not match, which it hands to
// s.unmatched(routes). So a request is matched once on its way to its
// route, and routes, which has no "/", still tells 404 from 405 (see
// unmatchedAsProblem).
func (s *Server) muxes() (mux, routes *http.ServeMux) {
	mux, routes = http.NewServeMux(), http.NewServeMux()
	s.routes = nil
	policy := Policy()
	handle := func(pattern string, h func(http.ResponseWriter, *http.Request) error) {
		s.routes = append(s.routes, pattern)
		// A route without a row is no one's (TestPolicyCoversRoutes).
		h = allowed(policy[pattern], h)
		f := func(w http.ResponseWriter, r *http.Request) {
			if e := logEntryOf(r.Context()); e != nil {
				e.route = pattern
			}
			if s.Tracer != nil {
				s.Tracer.Route(r, pattern)
			}
			if err := h(w, r); err != nil {
				s.writeError(w, r, err)
			}
		}
		mux.HandleFunc(pattern, f)
		routes.HandleFunc(pattern, f)
	}
	handle("GET /healthz", s.healthz)
	handle("GET /readyz", s.readyz)
	handle("GET /api/v1/openapi.json", s.openapi)

	handle("POST /api/v1/templates", s.createTemplate)
	handle("GET /api/v1/templates", s.listTemplates)
	handle("GET /api/v1/templates/{id}", s.getTemplate)
	handle("PATCH /api/v1/templates/{id}", s.editTemplate)
	handle("POST /api/v1/templates/{id}/activate", s.changeTemplate((*templates.Service).Activate))
	handle("POST /api/v1/templates/{id}/pause", s.changeTemplate((*templates.Service).Pause))
	handle("POST /api/v1/templates/{id}/resume", s.changeTemplate((*templates.Service).Resume))
	handle("POST /api/v1/templates/{id}/terminate", s.changeTemplate((*templates.Service).Terminate))
	handle("POST /api/v1/templates/{id}/stock", s.increaseStock)
	handle("GET /api/v1/templates/{id}/history", s.templateHistory)
	handle("GET /api/v1/templates/{id}/rules", s.templateRules)
	handle("POST /api/v1/templates/{id}/rules", s.changeRules)
	handle("POST /api/v1/templates/{id}/rules/evaluate", s.evaluateRules)

	if s.Stats != nil {
		handle("GET /api/v1/templates/{id}/stats", s.templateStats)
		handle("GET /api/v1/stats", s.shopStats)
	}

	if s.Tasks != nil {
		handle("POST /api/v1/tasks", s.createTask)
		handle("GET /api/v1/tasks", s.listTasks)
		handle("GET /api/v1/tasks/{id}", s.getTask)
		handle("POST /api/v1/tasks/{id}/cancel", s.cancelTask)
		handle("GET /api/v1/tasks/{id}/failures.xlsx", s.taskFailures)
		handle("GET /api/v1/tasks/{id}/failures.csv", s.taskFailuresCSV)
		handle("POST /api/v1/tasks/{id}/retry", s.retryTask)
		handle("GET /api/v1/tasks/{id}/notifications", s.taskNotifications)
		handle("GET /api/v1/tasks/{id}/notifications/failures.csv", s.taskNotificationFailuresCSV)
		if s.NotificationFailuresExport != nil {
			handle("GET /api/v1/tasks/{id}/notifications/failures.xlsx", s.taskNotificationFailuresXLSX)
		}
	}

	if s.Claims != nil {
		handle("POST /api/v1/templates/{id}/claim", s.claim)
		handle("POST /api/v1/promo-codes/{code}/claim", s.claimCode)
		handle("GET /api/v1/claims/{id}", s.getClaim)
	}
	if s.Centre != nil {
		handle("GET /api/v1/me/claimable", s.claimable)
	}
	if s.Wallet != nil {
		handle("GET /api/v1/me/coupons", s.listCoupons)
		handle("GET /api/v1/me/coupons/{id}", s.getCoupon)
		handle("GET /api/v1/coupons/by-code/{code}", s.couponByCode)
		handle("POST /api/v1/settlement/quote", s.quote)
		handle("POST /api/v1/orders/{order}/lock", s.lockOrder)
		handle("POST /api/v1/orders/{order}/redeem", s.orderStep(redeemStep))
		handle("POST /api/v1/orders/{order}/release", s.orderStep(releaseStep))
		handle("POST /api/v1/orders/{order}/refund", s.orderStep(refundStep))
		handle("POST /api/v1/coupons/by-code/{code}/redeem", s.redeemByCode)
	}
	if s.Staff != nil {
		handle("GET /api/v1/coupons", s.searchCoupons)
		handle("GET /api/v1/coupons/{id}", s.couponHistory)
		handle("POST /api/v1/coupons/{id}/revoke", s.revokeCoupon)
	}
	if s.Codes != nil {
		handle("POST /api/v1/templates/{id}/code-batches", s.createCodeBatch)
		handle("GET /api/v1/code-batches/{id}", s.getCodeBatch)
		handle("GET /api/v1/code-batches/{id}/codes.csv", s.exportCodes(false))
		if s.CodesExport != nil {
			handle("GET /api/v1/code-batches/{id}/codes.xlsx", s.exportCodes(true))
		}
		handle("POST /api/v1/codes/redeem", s.redeemCode)
	}
	if s.Notices != nil {
		handle("GET /api/v1/me/contact", s.getContact)
		handle("PUT /api/v1/me/contact", s.putContact)
		handle("GET /api/v1/users/{id}/contact", s.getContact)
		handle("PUT /api/v1/users/{id}/contact", s.putContact)
		handle("POST /api/v1/contacts/import", s.importContacts)
		handle("GET /api/v1/me/inbox", s.inbox)
		handle("GET /api/v1/me/inbox/unread-count", s.unreadCount)
		handle("POST /api/v1/me/inbox/read", s.markRead)
		handle("GET /api/v1/me/popups", s.popups)
		handle("POST /api/v1/me/popups/{id}/ack", s.ackPopup)
		handle("GET /api/v1/unsubscribe", s.unsubscribeForm)
		handle("POST /api/v1/unsubscribe", s.unsubscribe)
	}
	if s.Facts != nil {
		handle("GET /api/v1/users/{id}/attributes", s.getAttributes)
		handle("PUT /api/v1/users/{id}/attributes", s.putAttributes)
		handle("POST /api/v1/attributes/import", s.importAttributes)
	}
	if s.Shops != nil {
		handle("GET /api/v1/shops/{shopNo}/settings", s.getShopSettings)
		handle("PUT /api/v1/shops/{shopNo}/settings", s.putShopSettings)
	}
	if s.Reminders != nil {
		handle("POST /api/v1/templates/{id}/reminders", s.remindMe)
		handle("DELETE /api/v1/templates/{id}/reminders", s.cancelReminder)
		handle("GET /api/v1/me/reminders", s.reminders)
	}
	if s.Keys != nil {
		handle("GET /api/v1/api-keys", s.listKeys)
		handle("POST /api/v1/api-keys", s.createKey)
		handle("POST /api/v1/api-keys/{id}/revoke", s.revokeKey)
	}
	if s.Console != nil {
		mux.Handle("/console/", s.Console)
		mux.Handle("GET /console", http.RedirectHandler("/console/", http.StatusSeeOther))
	}
	mux.Handle("/", s.unmatched(routes))
	return mux, routes
}

// Routes returns the patterns Handler registered ("METHOD /path"), for the
// OpenAPI completeness test.
func (s *Server) Routes() []string { return s.routes }

// Open listens on addr (":0" picks a free port) and serves in the
// background, within s.Limits.
func (s *Server) Open(addr string) error {
	if s.Templates == nil || s.Tokens == nil {
		return errors.New("http server: Templates and Tokens are required")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	l := s.Limits.WithDefaults()
	s.ln = newCappedListener(ln, l.MaxConns, s.logger())
	// No ReadTimeout or WriteTimeout: either would bound a whole request,
	// and so cut off a large upload or a long download, a live stream,
	// on a slow but steady link. Bodies keep a pace instead (Limits).
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: l.HeaderTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.logger().Handler(), slog.LevelWarn),
	}
	if s.OnShutdown != nil {
		srv.RegisterOnShutdown(s.OnShutdown)
	}
	s.srv = srv
	go func() {
		if err := srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.logger().Error("http serve", "err", err)
		}
	}()
	return nil
}

// URL is the base URL the server listens on, once open.
func (s *Server) URL() string {
	if s.ln == nil {
		return ""
	}
	return "http://" + s.ln.Addr().String()
}

// Close stops accepting connections and waits, until ctx ends, for the
// requests in flight to finish. It is safe to call twice.
func (s *Server) Close(ctx context.Context) error {
	if s.srv == nil {
		return nil
	}
	err := s.srv.Shutdown(ctx)
	s.srv = nil
	if err != nil {
		return fmt.Errorf("http shutdown: %w", err)
	}
	return nil
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	s.writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

// readyz answers as ReadyHandler over the server's checks.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	s.Drain.Ready(ReadyHandler(s.Checks, s.logger())).ServeHTTP(w, r)
	return nil
}

// ReadyHandler runs every check at once, within 2 s: 200 when all pass,
// else 503 naming the dependencies that failed, as {"status", "checks"}.
// Why they failed goes to logger, never to the caller: the probe is open
// to anyone. The API serves it as /readyz; so does a worker's admin
// listener.
func ReadyHandler(checks map[string]func(context.Context) error, logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		results := make(map[string]string, len(checks))
		var (
			mu sync.Mutex
			wg sync.WaitGroup
		)
		for name, check := range checks {
			wg.Go(func() {
				state := "ok"
				if err := check(ctx); err != nil {
					logger.Warn("not ready", "dependency", name, "err", err)
					state = "unavailable"
				}
				mu.Lock()
				results[name] = state
				mu.Unlock()
			})
		}
		wg.Wait()
		status, code := "ok", http.StatusOK
		for _, state := range results {
			if state != "ok" {
				status, code = "unavailable", http.StatusServiceUnavailable
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(map[string]any{"status": status, "checks": results})
	})
}

// recoverer turns a handler panic into a logged 500 problem.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.writeError(w, r, fmt.Errorf("panic: %v", v))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// unmatchedAsProblem answers requests no route matches with a problem
// document instead of the mux's plain text: 405 with its Allow header when
// the path exists under another method, 404 otherwise.
//
// A request with a clean path is matched once, by mux: it finds the route,
// or hands it to s.unmatched if none matches. One with a path to clean
// (//a, /a/../b) goes to s.unmatched at once: mux would redirect it
// whether a route matches its clean path or not, where s.unmatched
// redirects an unmatched one without a body, as ever.
func (s *Server) unmatchedAsProblem(mux, routes *http.ServeMux) http.Handler {
	unmatched := s.unmatched(routes)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.EscapedPath(); r.Method == http.MethodConnect || cleanPath(p) == p {
			mux.ServeHTTP(w, r)
			return
		}
		unmatched.ServeHTTP(w, r)
	})
}

// unmatched serves a request by routes if a route matches it (or it is
// to be redirected to one); else it answers 405 with the Allow header
// when the path exists under another method, 404 when it does not, or
// with the redirect routes gives, without its body.
func (s *Server) unmatched(routes *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := routes.Handler(r); pattern != "" {
			routes.ServeHTTP(w, r)
			return
		}
		probe := &allowRecorder{header: http.Header{}}
		routes.ServeHTTP(probe, r)
		switch probe.status {
		case http.StatusMethodNotAllowed:
			w.Header().Set("Allow", probe.header.Get("Allow"))
			s.writeError(w, r, quan.Errorf(codeMethodNotAllowed, "%s is not allowed on %s", r.Method, r.URL.Path))
		case http.StatusNotFound:
			s.writeError(w, r, quan.Errorf(quan.ENOTFOUND, "no route %s %s", r.Method, r.URL.Path))
		default: // a redirect to the clean path
			for k, v := range probe.header {
				w.Header()[k] = v
			}
			w.WriteHeader(probe.status)
		}
	})
}

// cleanPath is net/http's: the path ServeMux routes p by, which it
// redirects to if it is not p.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	// path.Clean removes trailing slash except for root;
	// put the trailing slash back if necessary.
	if p[len(p)-1] == '/' && np != "/" {
		// Fast path for common case of p being the string we want:
		if len(p) == len(np)+1 && strings.HasPrefix(p, np) {
			np = p
		} else {
			np += "/"
		}
	}
	return np
}

// allowRecorder captures only the status and headers of a response.
type allowRecorder struct {
	header http.Header
	status int
}

func (a *allowRecorder) Header() http.Header         { return a.header }
func (a *allowRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (a *allowRecorder) WriteHeader(status int)      { a.status = status }

// target returns the caller's identity and the {id} of the path. An id
// that is not a positive integer is no what anyone can have: ErrNotFound.
func target(r *http.Request, what string) (quan.Identity, int64, error) {
	who, err := identity(r)
	if err != nil {
		return who, 0, err
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return who, 0, quan.Errorf(quan.ENOTFOUND, "no %s %q", what, r.PathValue("id"))
	}
	return who, id, nil
}
