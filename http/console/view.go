package console

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/quanhq/quan"
)

// view is what every page template gets: the page's own data in Data, and
// the operator's language, time zone, account and CSRF token.
type view struct {
	Lang    string
	Title   string
	Path    string // the request's path and query, to come back to
	Account *quan.Account
	CSRF    string
	Data    any
	// Fields holds the problem of each invalid form field, by the field's
	// name in quan's validation (e.g. "rule.amount").
	Fields map[string]string
	Notice string // one line shown above the page (e.g. "saved")
	Error  string // one line shown above the page as an error
	// KeysPage says the console serves the service keys' page.
	KeysPage bool
	loc      *time.Location
}

func (c *Console) newView(r *http.Request, s *session) *view {
	v := &view{Lang: defaultLang, Path: r.URL.RequestURI(), loc: c.zone("Asia/Shanghai"), KeysPage: c.Keys != nil}
	if ck, err := r.Cookie(langCookie); err == nil {
		if _, ok := languages[ck.Value]; ok {
			v.Lang = ck.Value
		}
	}
	if ck, err := r.Cookie(tzCookie); err == nil {
		if loc := c.zone(ck.Value); loc != nil {
			v.loc = loc
		}
	}
	if s != nil {
		v.Account = s.Account
		v.CSRF = s.CSRF
	}
	return v
}

// T is the message of key in the page's language, formatted with args.
func (v *view) T(key string, args ...any) string { return translate(v.Lang, key, args...) }

// Time formats t in the operator's time zone; "" for the zero time.
func (v *view) Time(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.In(v.loc).Format("2006-01-02 15:04:05")
}

// InputTime formats t for a datetime-local input in the operator's zone.
func (v *view) InputTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.In(v.loc).Format("2006-01-02T15:04")
}

// Zone names the operator's time zone.
func (v *view) Zone() string { return v.loc.String() }

// Err is the problem of form field name, or "".
func (v *view) Err(name string) string { return v.Fields[name] }

// Admin reports whether the operator is a platform admin.
func (v *view) Admin() bool { return v.Account != nil && v.Account.Role == quan.RoleAdmin }

// setError puts err on the page: an EINVALID one's fields next to their
// inputs, anything else (or a field without an input) as the page's error.
func (v *view) setError(err error, inputs ...string) {
	var qe *quan.Error
	if !errors.As(err, &qe) || qe.Code != quan.EINVALID {
		v.Error = quan.ErrorMessage(err)
		return
	}
	v.Fields = map[string]string{}
	var rest []string
	for _, f := range qe.Fields {
		name := f.Field
		known := false
		for _, in := range inputs {
			if in == name {
				known = true
			}
		}
		if known {
			v.Fields[name] = f.Message
		} else {
			rest = append(rest, f.Field+": "+f.Message)
		}
	}
	v.Error = qe.Message
	if len(rest) > 0 {
		v.Error += ": " + strings.Join(rest, "; ")
	}
}

// render writes page name in the layout with data, as status.
func (c *Console) render(w http.ResponseWriter, r *http.Request, s *session, status int, name, title string, data any) {
	v := c.newView(r, s)
	v.Data = data
	v.Title = v.T(title)
	c.renderView(w, status, name, v)
}

// renderView writes page name of v; a template error is logged and
// answered 500 before anything is sent.
func (c *Console) renderView(w http.ResponseWriter, status int, name string, v *view) {
	t, ok := c.pages[name]
	if !ok {
		c.logger().Error("console page missing", "page", name)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	buf := bufPool.Get().(*bytes.Buffer)
	defer bufPool.Put(buf)
	buf.Reset()
	if err := t.ExecuteTemplate(buf, "layout", v); err != nil {
		c.logger().Error("console page", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// parsePages parses each page of templates/ with the layout.
func parsePages() (map[string]*template.Template, error) {
	names, err := fs.Glob(assets, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("console templates: %w", err)
	}
	pages := make(map[string]*template.Template, len(names))
	for _, n := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.New(name).Funcs(funcs).ParseFS(assets, "templates/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("console page %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// funcs are the helpers every page template may use.
var funcs = template.FuncMap{
	"yuan": yuan,
	"add":  func(a, b int) int { return a + b },
	"list": func(xs ...string) []string { return xs },
	"pct": func(n, of int64) string {
		if of <= 0 {
			return "0"
		}
		return strconv.FormatFloat(float64(n)*100/float64(of), 'f', 1, 64)
	},
}

// yuan formats an amount in fen as yuan with two decimals: 1250 → "12.50".
func yuan(fen int64) string {
	sign := ""
	if fen < 0 {
		sign, fen = "-", -fen
	}
	return fmt.Sprintf("%s%d.%02d", sign, fen/100, fen%100)
}

// parseYuan reads an amount in yuan ("12", "12.5", "12.50") exactly, as
// fen: no float rounding. "" is 0.
func parseYuan(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	whole, frac, dot := strings.Cut(s, ".")
	if whole == "" || (dot && (frac == "" || len(frac) > 2)) {
		return 0, fmt.Errorf("%q is not an amount in yuan with at most two decimals", s)
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w < 0 || w > quan.MaxAmount/100 {
		return 0, fmt.Errorf("%q is not an amount in yuan with at most two decimals", s)
	}
	var f int64
	if frac != "" {
		for len(frac) < 2 {
			frac += "0"
		}
		f, err = strconv.ParseInt(frac, 10, 64)
		if err != nil || f < 0 {
			return 0, fmt.Errorf("%q is not an amount in yuan with at most two decimals", s)
		}
	}
	return w*100 + f, nil
}

// zone returns the time zone named name, loaded once, or nil if there
// is none of that name. Asia/Shanghai is always there: China Standard
// Time, the console's zone until the browser says its own.
func (c *Console) zone(name string) *time.Location {
	if loc, ok := c.zones.Load(name); ok {
		return loc.(*time.Location)
	}
	if name == "" || len(name) > 64 {
		return nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		if name != "Asia/Shanghai" {
			return nil
		}
		loc = time.FixedZone("CST", 8*3600)
	}
	c.zones.Store(name, loc)
	return loc
}
