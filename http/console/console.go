// Package console is quan's operator console in the browser, served at
// /console: merchants' operators and platform admins sign in with a
// password and run their campaigns through the same services as the API
// (templates.Service, tasks.Service, stats.Service, codes.Service), with
// their identity's rights. Pages are rendered on the server from embedded
// html/template files; a little JavaScript (static/console.js) adds the
// live parts: progress pushed as Server-Sent Events, the discount preview,
// and the charts, drawn by the vendored uPlot.
package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"path"
	"sync"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/accounts"
	"github.com/quanhq/quan/codes"
	qhttp "github.com/quanhq/quan/http"
	"github.com/quanhq/quan/stats"
	"github.com/quanhq/quan/tasks"
	"github.com/quanhq/quan/templates"
)

//go:embed static templates
var assets embed.FS

// Prefix is where the console is served.
const Prefix = "/console"

// Accounts signs operators in and out, and lets admins manage them;
// accounts.Service is one.
type Accounts interface {
	Login(ctx context.Context, name, password, addr string) (token string, s *quan.Session, a *quan.Account, err error)
	Authenticate(ctx context.Context, token string) (*quan.Session, *quan.Account, error)
	Logout(ctx context.Context, token string) error
	Add(ctx context.Context, who quan.Identity, in accounts.NewAccount) (*quan.Account, error)
	List(ctx context.Context, who quan.Identity, f quan.AccountFilter) ([]*quan.Account, int, error)
	SetDisabled(ctx context.Context, who quan.Identity, id int64, disabled bool) (*quan.Account, error)
	ResetPassword(ctx context.Context, who quan.Identity, id int64, password string) (*quan.Account, error)
}

// Console serves the operator console. Set the fields, then call Handler
// once.
type Console struct {
	Accounts Accounts
	// Keys serves the service keys' page to admins; nil: no such page.
	Keys      Keys
	Templates *templates.Service
	Tasks     *tasks.Service // nil: no distribution pages
	Stats     *stats.Service // nil: no statistics pages
	Codes     *codes.Service // nil: no code pages
	// CodesExport writes a code batch as .xlsx; nil offers .csv only.
	CodesExport quan.CodesExport
	// Proxies are the reverse proxies whose X-Forwarded-For and
	// X-Real-IP say which address a sign-in comes from; nil trusts none:
	// the connection's address.
	Proxies qhttp.Proxies
	Now     quan.Clock   // nil: time.Now
	Logger  *slog.Logger // nil discards

	pages map[string]*template.Template
	zones sync.Map // of *time.Location by name: see zone
	// closers stop what Handler started (the hubs' pollers).
	closers []func()
	stats   statsHubs // the live template's and code batches' (stats.go)
}

func (c *Console) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// Handler returns the console's handler for every path under Prefix.
func (c *Console) Handler() (http.Handler, error) {
	if c.Accounts == nil || c.Templates == nil {
		return nil, errors.New("console: Accounts and Templates are required")
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	c.pages = pages
	static, err := fs.Sub(assets, "static")
	if err != nil {
		return nil, fmt.Errorf("console static assets: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+Prefix+"/static/", http.StripPrefix(Prefix+"/static/", staticFiles(static)))
	mux.HandleFunc("GET "+Prefix+"/login", c.loginForm)
	mux.HandleFunc("POST "+Prefix+"/login", c.login)
	mux.HandleFunc("GET "+Prefix+"/lang", c.setLang)

	// Every other page needs a session; state-changing requests also need
	// its CSRF token (see signedIn).
	page := func(pattern string, h pageFunc) {
		mux.Handle(pattern, c.signedIn(h))
	}
	page("POST "+Prefix+"/logout", c.logout)
	page("GET "+Prefix+"/{$}", func(w http.ResponseWriter, r *http.Request, s *session) error {
		http.Redirect(w, r, Prefix+"/templates", http.StatusSeeOther)
		return nil
	})
	c.templateRoutes(page)
	c.taskRoutes(page)
	c.statsRoutes(page)
	c.accountRoutes(page)
	if c.Keys != nil {
		c.keyRoutes(page)
	}
	mux.HandleFunc(Prefix+"/", func(w http.ResponseWriter, r *http.Request) {
		c.signedIn(func(w http.ResponseWriter, r *http.Request, s *session) error {
			return quan.Errorf(quan.ENOTFOUND, "no page %s", r.URL.Path)
		}).ServeHTTP(w, r)
	})
	return c.secure(mux), nil
}

// Close stops the live streams' pollers; the pages still open end their
// streams.
func (c *Console) Close() {
	for _, stop := range c.closers {
		stop()
	}
}

// secure sets the headers every console response carries: no framing, no
// sniffing, scripts and styles from the console itself only.
func (c *Console) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

// staticFiles serves the embedded assets the pages load (and the
// vendored code's licence), cached by the browser for a day: their names
// do not change with their content, so not for ever.
func staticFiles(static fs.FS) http.Handler {
	files := http.FileServerFS(static)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch path.Ext(r.URL.Path) {
		case ".js", ".css", ".png", ".svg":
		default:
			if path.Base(r.URL.Path) != "LICENSE" {
				http.NotFound(w, r)
				return
			}
		}
		w.Header().Set("Cache-Control", "public, max-age=86400")
		files.ServeHTTP(w, r)
	})
}
