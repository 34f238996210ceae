package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/accounts"
	qhttp "github.com/quanhq/quan/http"
)

// Cookies of the console. The session cookie holds the session's token;
// the login cookie holds the token the sign-in form must echo (a
// double-submit CSRF check before there is a session).
const (
	sessionCookie = "quan_session"
	loginCookie   = "quan_login"
	langCookie    = "quan_lang"
	tzCookie      = "quan_tz"
	csrfField     = "csrf"
	csrfHeader    = "X-CSRF-Token"
)

// session is a signed-in request: who, in which language and time zone.
type session struct {
	*quan.Session
	Account *quan.Account
	Who     quan.Identity
	token   string
	// form is the rest of a multipart body whose first part, the CSRF
	// token, signedIn has read and checked; nil for other requests.
	form *multipart.Reader
}

// pageFunc handles a page for a signed-in operator. Its error is shown as
// an error page with the status of its code.
type pageFunc func(w http.ResponseWriter, r *http.Request, s *session) error

// signedIn lets through requests of a live session, and of those the
// state-changing ones only with the session's CSRF token: in the
// X-CSRF-Token header, in the csrf field of a urlencoded form, or as the
// first part of a multipart form (which the handler then reads on from
// s.form, so that an upload is streamed, not parsed first). A request
// from another origin is refused whatever it carries. Without a session a
// page redirects to the sign-in form, and anything else answers 401.
func (c *Console) signedIn(h pageFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := c.session(r)
		if err != nil {
			if quan.ErrorCode(err) == quan.EUNAUTHORIZED {
				clearCookie(w, r, sessionCookie)
				if r.Method == http.MethodGet && !wantsEvents(r) {
					http.Redirect(w, r, Prefix+"/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
					return
				}
			}
			c.fail(w, r, nil, err)
			return
		}
		if !safeMethod(r.Method) {
			if err := checkCSRF(r, s); err != nil {
				c.logger().Warn("console request refused", "path", r.URL.Path, "account", s.Account.Name, "err", err)
				c.fail(w, r, s, err)
				return
			}
		}
		ctx := quan.NewContextWithIdentity(r.Context(), s.Who)
		if err := h(w, r.WithContext(ctx), s); err != nil {
			c.fail(w, r, s, err)
		}
	})
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

func wantsEvents(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// session returns the signed-in session of r, or EUNAUTHORIZED.
func (c *Console) session(r *http.Request) (*session, error) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil || ck.Value == "" {
		return nil, quan.Errorf(quan.EUNAUTHORIZED, "please sign in")
	}
	sess, acct, err := c.Accounts.Authenticate(r.Context(), ck.Value)
	if err != nil {
		return nil, err
	}
	return &session{Session: sess, Account: acct, Who: acct.Identity(), token: ck.Value}, nil
}

// errCSRF is the refusal of a state-changing request without the
// session's token.
var errCSRF = quan.Errorf(quan.EFORBIDDEN, "the request lacks this session's CSRF token: reload the page and try again")

func checkCSRF(r *http.Request, s *session) error {
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return quan.Errorf(quan.EFORBIDDEN, "the request comes from another origin (%s)", o)
		}
	}
	if tok := r.Header.Get(csrfHeader); tok != "" {
		return matchToken(tok, s.CSRF)
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case "application/x-www-form-urlencoded":
		return matchToken(r.PostFormValue(csrfField), s.CSRF)
	case "multipart/form-data":
		mr, err := r.MultipartReader()
		if err != nil {
			return quan.Errorf(quan.EINVALID, "read the form: %v", err)
		}
		p, err := mr.NextPart()
		if err != nil || p.FormName() != csrfField {
			return errCSRF
		}
		var buf [128]byte
		n, _ := p.Read(buf[:])
		if err := matchToken(string(buf[:n]), s.CSRF); err != nil {
			return err
		}
		s.form = mr
		return nil
	}
	return errCSRF
}

func matchToken(got, want string) error {
	if got == "" || want == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return errCSRF
	}
	return nil
}

// secureCookies reports whether cookies should be Secure: over TLS, or
// behind a proxy that says it terminated TLS.
func secureCookies(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

func setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge time.Duration, httpOnly bool) {
	http.SetCookie(w, &http.Cookie{
		Name:     name,
		Value:    value,
		Path:     Prefix,
		MaxAge:   int(maxAge / time.Second),
		HttpOnly: httpOnly,
		Secure:   secureCookies(r),
		SameSite: http.SameSiteLaxMode,
	})
}

func clearCookie(w http.ResponseWriter, r *http.Request, name string) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: Prefix, MaxAge: -1,
		HttpOnly: true, Secure: secureCookies(r), SameSite: http.SameSiteLaxMode})
}

func randomToken() string {
	var b [24]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// clientAddr is the address sign-in failures are counted under: the
// connection's, or the one a trusted proxy forwarded (see
// qhttp.Proxies.ClientAddr); a forwarded header from anyone else could
// be forged.
func (c *Console) clientAddr(r *http.Request) string {
	return c.Proxies.ClientAddr(r)
}

// nextPage is where to go after signing in: a console page, never
// another site.
func nextPage(v string) string {
	if !strings.HasPrefix(v, Prefix+"/") || strings.HasPrefix(v, "//") || strings.ContainsAny(v, "\\\r\n") {
		return Prefix + "/templates"
	}
	return v
}

type loginData struct {
	Name, Next, Token, Error string
}

func (c *Console) loginForm(w http.ResponseWriter, r *http.Request) {
	if _, err := c.session(r); err == nil {
		http.Redirect(w, r, nextPage(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	c.showLogin(w, r, http.StatusOK, loginData{Next: nextPage(r.URL.Query().Get("next"))})
}

func (c *Console) showLogin(w http.ResponseWriter, r *http.Request, status int, d loginData) {
	d.Token = randomToken()
	setCookie(w, r, loginCookie, d.Token, time.Hour, true)
	c.render(w, r, nil, status, "login", "login.title", d)
}

func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	v := c.newView(r, nil)
	name := strings.TrimSpace(r.PostFormValue("name"))
	d := loginData{Name: name, Next: nextPage(r.PostFormValue("next"))}
	ck, err := r.Cookie(loginCookie)
	if err != nil || matchToken(r.PostFormValue(csrfField), ck.Value) != nil {
		d.Error = v.T("login.expired")
		c.showLogin(w, r, http.StatusForbidden, d)
		return
	}
	token, _, acct, err := c.Accounts.Login(r.Context(), name, r.PostFormValue("password"), c.clientAddr(r))
	if err != nil {
		status := http.StatusUnauthorized
		switch quan.ErrorCode(err) {
		case quan.EUNAUTHORIZED:
			d.Error = v.T("login.wrong")
		case quan.ERATELIMITED:
			status = http.StatusTooManyRequests
			secs := max(int64(math.Ceil(quan.ErrorRetryAfter(err).Seconds())), 1)
			w.Header().Set("Retry-After", fmt.Sprint(secs))
			if errors.Is(err, accounts.ErrSlowed) {
				d.Error = v.T("login.slowed", secs)
			} else {
				d.Error = v.T("login.locked", max((secs+59)/60, 1))
			}
		default:
			c.fail(w, r, nil, err)
			return
		}
		c.showLogin(w, r, status, d)
		return
	}
	clearCookie(w, r, loginCookie)
	setCookie(w, r, sessionCookie, token, 0, true) // a browser session; the server ends it sooner when idle
	c.logger().Info("console sign-in", "account", acct.Name, "addr", c.clientAddr(r))
	http.Redirect(w, r, d.Next, http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := c.Accounts.Logout(r.Context(), s.token); err != nil {
		return fmt.Errorf("sign out: %w", err)
	}
	clearCookie(w, r, sessionCookie)
	http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
	return nil
}

// setLang keeps the language the operator picked and goes back.
func (c *Console) setLang(w http.ResponseWriter, r *http.Request) {
	lang := r.URL.Query().Get("to")
	if _, ok := languages[lang]; !ok {
		lang = defaultLang
	}
	setCookie(w, r, langCookie, lang, 365*24*time.Hour, false)
	http.Redirect(w, r, nextPage(r.URL.Query().Get("next")), http.StatusSeeOther)
}

// fail shows err as an error page, with the status of its code and the
// headers it calls for (Retry-After when a backend is down); an internal
// error is logged and shown without its detail, a backend's with its
// message only.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, s *session, err error) {
	code := quan.ErrorCode(err)
	status := qhttp.PrepareError(w, r, err)
	msg := err.Error()
	var qe *quan.Error
	if errors.As(err, &qe) {
		msg = qe.Message
		for i, f := range qe.Fields { // the page has no inputs to show them by
			sep := "; "
			if i == 0 {
				sep = ": "
			}
			msg += sep + f.Field + " " + f.Message
		}
	}
	switch status {
	case http.StatusInternalServerError:
		c.logger().Error("console request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		msg = ""
	case http.StatusServiceUnavailable, http.StatusInsufficientStorage:
		c.logger().Warn("console request failed", "method", r.Method, "path", r.URL.Path, "backend", quan.ErrorBackend(err), "err", err)
	}
	if wantsEvents(r) || r.Header.Get(csrfHeader) != "" {
		http.Error(w, msg, status)
		return
	}
	c.render(w, r, s, status, "error", "error.title", errorData{Status: status, Code: code, Message: msg})
}

type errorData struct {
	Status  int
	Code    string
	Message string
}
