// Package mail sends quan's notifications by email over SMTP, through
// github.com/wneessen/go-mail, keeping a small pool of connections open
// and sending each batch down them. It implements quan.Sender.
package mail

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/quanhq/quan"
)

// TLS modes.
const (
	TLSStartTLS = "starttls" // smtp:// default: plain connect, then STARTTLS, which the server must offer
	TLSImplicit = "implicit" // smtps://: TLS from the first byte
	TLSNone     = "none"     // ?tls=none: no TLS at all, accepted only for a loopback host (tests)
)

// Endpoint is a parsed --smtp-url.
type Endpoint struct {
	Host     string
	Port     int
	User     string
	Password string
	From     string // the envelope and header sender
	TLS      string // TLSStartTLS, TLSImplicit or TLSNone
	Auth     string // "plain" (the default when User is set), "login", or "" without a user
}

// ParseURL parses smtp://user:pass@host:587?from=noreply@example.com.
//
// smtp:// connects to port 587 by default and requires STARTTLS; smtps://
// connects to 465 with TLS from the start. Query parameters: from (the
// sender, required), tls=none (only for localhost or a loopback address),
// auth=plain|login (PLAIN by default; only with a user). Errors name the
// part that is wrong and never echo the password.
func ParseURL(s string) (Endpoint, error) {
	fail := func(format string, args ...any) (Endpoint, error) {
		return Endpoint{}, fmt.Errorf("smtp url: "+format, args...)
	}
	u, err := url.Parse(s)
	if err != nil {
		// url's errors quote the whole URL, password included.
		return fail("not a URL; want smtp://user:pass@host:587?from=noreply@example.com")
	}
	var ep Endpoint
	switch u.Scheme {
	case "smtp":
		ep.TLS, ep.Port = TLSStartTLS, 587
	case "smtps":
		ep.TLS, ep.Port = TLSImplicit, 465
	default:
		return fail("scheme %q: use smtp:// (STARTTLS) or smtps:// (implicit TLS)", u.Scheme)
	}
	ep.Host = u.Hostname()
	if ep.Host == "" {
		return fail("no host")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return fail("port %q is not 1 to 65535", p)
		}
		ep.Port = n
	}
	if u.Path != "" && u.Path != "/" {
		return fail("path %q: an SMTP URL has none", u.Path)
	}
	if u.User != nil {
		ep.User = u.User.Username()
		ep.Password, _ = u.User.Password()
		if ep.User == "" {
			return fail("user is empty")
		}
		ep.Auth = "plain"
	}
	q := u.Query()
	for k := range q {
		switch k {
		case "from", "tls", "auth":
		default:
			return fail("unknown parameter %q: known are from, tls and auth", k)
		}
	}
	from := q.Get("from")
	if from == "" {
		return fail("from: missing; add ?from=noreply@example.com")
	}
	if ep.From, err = quan.NormalizeMail(from); err != nil {
		return fail("from: %v", err)
	}
	switch t := q.Get("tls"); t {
	case "":
	case TLSNone:
		if !loopback(ep.Host) {
			return fail("tls=none: only for localhost; a remote server needs STARTTLS or smtps://")
		}
		ep.TLS = TLSNone
	case TLSStartTLS:
		if ep.TLS == TLSImplicit {
			return fail("tls=starttls: smtps:// is implicit TLS; use smtp:// for STARTTLS")
		}
	default:
		return fail("tls %q: use starttls (the default for smtp://) or none", t)
	}
	switch a := strings.ToLower(q.Get("auth")); a {
	case "":
	case "plain", "login":
		if ep.User == "" {
			return fail("auth=%s: no user in the URL", a)
		}
		ep.Auth = a
	default:
		return fail("auth %q: use plain or login", a)
	}
	return ep, nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Defaults.
const (
	DefaultConns   = 4
	DefaultTimeout = 15 * time.Second
	// DefaultAuthRetry is how long a batch waits after the server refused
	// the login: the operator has a password to fix.
	DefaultAuthRetry = time.Minute
)

// Config configures a Sender. URL and Unsubscribe are required.
type Config struct {
	URL string // see ParseURL
	// Unsubscribe returns the one-click unsubscribe URL for a message
	// (https, accepting GET and RFC 8058 POST); every mail links it in
	// its body and its List-Unsubscribe header. UnsubscribeLink builds one
	// from a base and a token.
	Unsubscribe func(quan.Outgoing) string
	// Conns is how many connections send in parallel; 0 is DefaultConns.
	Conns int
	// Timeout bounds connecting and each batch of up to batchSize mails
	// on a connection; 0 is DefaultTimeout.
	Timeout time.Duration
	// TLSConfig overrides the TLS settings (a private CA); nil verifies
	// the host's certificate against the system roots.
	TLSConfig *tls.Config
	// HELO is the name given in EHLO; empty is the host's name.
	HELO   string
	Logger *slog.Logger // nil discards
}

// UnsubscribeLink returns an Unsubscribe function that adds token(m),
// which the caller signs, to base as the query parameter "t":
// https://quan.example.com/unsubscribe?t=TOKEN.
func UnsubscribeLink(base string, token func(quan.Outgoing) string) (func(quan.Outgoing) string, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("unsubscribe base %q: want an http(s) URL", base)
	}
	return func(m quan.Outgoing) string {
		v := *u
		q := v.Query()
		q.Set("t", token(m))
		v.RawQuery = q.Encode()
		return v.String()
	}, nil
}
