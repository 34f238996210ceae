package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	gomail "github.com/wneessen/go-mail"
	"github.com/wneessen/go-mail/smtp"

	"github.com/quanhq/quan"
)

var _ quan.Sender = (*Sender)(nil)

// batchSize is how many mails go down a connection under one deadline
// (Timeout) and one NOOP check: go-mail sets the deadline per call.
const batchSize = 64

// Sender sends mails through one SMTP server over up to Conns connections
// kept open between batches.
//
// Answers map to results so: a 2xx acceptance of the data is Sent; a 4xx
// reply is RetryLater; a 5xx reply is FailedForGood with the server's text
// as the reason; a refused or broken connection, a timeout or a cancelled
// context is RetryLater. A login the server refuses (535) is RetryLater
// with After DefaultAuthRetry rather than FailedForGood: the recipients
// are fine and the password is the operator's to fix; Check reports it
// at start-up.
type Sender struct {
	ep     Endpoint
	cfg    Config
	client *gomail.Client // dials; safe for concurrent dials and sends on distinct connections
	log    *slog.Logger
	domain string // of From: Message-IDs are <id@domain>

	slots chan struct{} // one per connection that may be open
	mu    sync.Mutex
	// idle holds the open connections not in use; a Send waiting for a
	// slot takes one the moment another Send puts it back. Its capacity
	// is Conns, so a put never blocks.
	idle chan *conn
	done bool
}

type conn struct {
	c  *smtp.Client
	nc net.Conn // to cut a send short when its ctx ends
}

type connKey struct{}

// New returns a Sender for cfg. It does not connect: the first Send or
// Check does.
func New(cfg Config) (*Sender, error) {
	ep, err := ParseURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	if cfg.Unsubscribe == nil {
		return nil, errors.New("mail: Unsubscribe is required: every mail carries an unsubscribe link")
	}
	if cfg.Conns <= 0 {
		cfg.Conns = DefaultConns
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tlsConf := cfg.TLSConfig
	if tlsConf == nil {
		tlsConf = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	tlsConf = tlsConf.Clone()
	if tlsConf.ServerName == "" {
		tlsConf.ServerName = ep.Host
	}
	s := &Sender{ep: ep, cfg: cfg, log: log, slots: make(chan struct{}, cfg.Conns), idle: make(chan *conn, cfg.Conns)}
	s.domain = ep.From[strings.LastIndexByte(ep.From, '@')+1:]

	opts := []gomail.Option{
		gomail.WithPort(ep.Port),
		gomail.WithTimeout(cfg.Timeout),
		gomail.WithTLSConfig(tlsConf),
		gomail.WithoutRset(), // a successful DATA ends the transaction: RSET would be a round trip for nothing
		gomail.WithDialContextFunc(func(ctx context.Context, network, addr string) (net.Conn, error) {
			d := &net.Dialer{}
			var nc net.Conn
			var err error
			if ep.TLS == TLSImplicit {
				nc, err = (&tls.Dialer{NetDialer: d, Config: tlsConf}).DialContext(ctx, network, addr)
			} else {
				nc, err = d.DialContext(ctx, network, addr)
			}
			if err == nil {
				*ctx.Value(connKey{}).(*net.Conn) = nc
			}
			return nc, err
		}),
	}
	switch ep.TLS {
	case TLSImplicit:
		opts = append(opts, gomail.WithSSL()) // the dialer does the TLS; this stops STARTTLS
	case TLSNone:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	default:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	}
	if cfg.HELO != "" {
		opts = append(opts, gomail.WithHELO(cfg.HELO))
	}
	if ep.User != "" {
		auth := map[string]gomail.SMTPAuthType{"plain": gomail.SMTPAuthPlain, "login": gomail.SMTPAuthLogin}[ep.Auth]
		if ep.TLS == TLSNone { // loopback only: ParseURL made sure
			auth = map[string]gomail.SMTPAuthType{"plain": gomail.SMTPAuthPlainNoEnc, "login": gomail.SMTPAuthLoginNoEnc}[ep.Auth]
		}
		opts = append(opts, gomail.WithSMTPAuth(auth), gomail.WithUsername(ep.User), gomail.WithPassword(ep.Password))
	}
	if s.client, err = gomail.NewClient(ep.Host, opts...); err != nil {
		return nil, fmt.Errorf("mail: %w", err)
	}
	return s, nil
}

// Check connects and logs in once, returning why it cannot ("smtp auth:
// 535 ..."), so that a wrong --smtp-url fails at start-up rather than in
// the dead letters. The connection joins the pool.
func (s *Sender) Check(ctx context.Context) error {
	c, err := s.get(ctx)
	if err != nil {
		return err
	}
	s.put(c)
	return nil
}

// Send implements quan.Sender: it splits msgs among up to Conns
// connections, each sending its share in order.
func (s *Sender) Send(ctx context.Context, msgs []quan.Outgoing) []quan.SendResult {
	results := make([]quan.SendResult, len(msgs))
	var todo []int
	for i, m := range msgs {
		if err := m.Validate(); err != nil {
			results[i] = quan.SendResult{Outcome: quan.FailedForGood, Reason: err.Error()}
		} else if m.Channel != quan.NotifyEmail {
			results[i] = quan.SendResult{Outcome: quan.FailedForGood, Reason: fmt.Sprintf("mail: message %s is for channel %s", m.ID, m.Channel)}
		} else {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return results
	}
	// Shares of at least batchSize: a small batch goes down one connection.
	n := min(s.cfg.Conns, (len(todo)+batchSize-1)/batchSize)
	var wg sync.WaitGroup
	for w := range n {
		share := todo[w*len(todo)/n : (w+1)*len(todo)/n]
		wg.Go(func() { s.sendShare(ctx, msgs, share, results) })
	}
	wg.Wait()
	return results
}

// sendShare sends msgs[i] for i in share down one connection, batchSize at
// a time, writing results[i].
func (s *Sender) sendShare(ctx context.Context, msgs []quan.Outgoing, share []int, results []quan.SendResult) {
	var c *conn
	redialed := false
	defer func() {
		if c != nil {
			s.put(c)
		}
	}()
	for len(share) > 0 {
		k := min(batchSize, len(share))
		batch := share[:k]
		if err := ctx.Err(); err != nil {
			retry(results, share, 0, "mail: "+err.Error())
			return
		}
		if c == nil {
			var err error
			if c, err = s.get(ctx); err != nil {
				after := time.Duration(0)
				if isAuth(err) {
					after = DefaultAuthRetry
				}
				retry(results, share, after, err.Error())
				return
			}
		}
		ok, stale := s.sendBatch(ctx, c, msgs, batch, results)
		if !ok { // the connection broke: a fresh one for the rest
			s.discard(c)
			c = nil
		}
		if stale && !redialed {
			// A pooled connection the server closed while idle: nothing
			// was sent, so the same batch goes again on a new one, once.
			redialed = true
			continue
		}
		redialed = false
		share = share[k:]
	}
}

// sendBatch sends one batch down c and reports whether c is still good,
// and whether it was found dead before anything was sent (stale).
func (s *Sender) sendBatch(ctx context.Context, c *conn, msgs []quan.Outgoing, batch []int, results []quan.SendResult) (good, stale bool) {
	ms := make([]*gomail.Msg, len(batch))
	for j, i := range batch {
		m, err := s.build(msgs[i])
		if err != nil {
			results[i] = quan.SendResult{Outcome: quan.FailedForGood, Reason: err.Error()}
			continue
		}
		ms[j] = m
	}
	stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(time.Unix(1, 0)) })
	err := s.client.SendWithSMTPClient(c.c, ms...)
	cut := !stop()
	good = !cut
	var whole *gomail.SendError
	if errors.As(err, &whole) && whole.Reason == gomail.ErrConnCheck {
		// The connection failed its NOOP: nothing was sent.
		retry(results, batch, 0, "mail: "+err.Error())
		return false, !cut
	}
	for j, i := range batch {
		m := ms[j]
		if m == nil {
			continue
		}
		if m.IsDelivered() {
			results[i] = quan.SendResult{Outcome: quan.Sent}
			continue
		}
		r, broken := outcome(m.SendError(), cut)
		results[i] = r
		if broken {
			good = false
		}
	}
	return good, false
}

// outcome maps a message's send error: a server reply by its class; any
// other error (I/O, timeout) is RetryLater and means the connection is
// no longer usable.
func outcome(err error, cut bool) (r quan.SendResult, broken bool) {
	if err == nil {
		return quan.SendResult{Outcome: quan.RetryLater, Reason: "mail: not sent"}, true
	}
	var se *gomail.SendError
	if !errors.As(err, &se) {
		return quan.SendResult{Outcome: quan.RetryLater, Reason: "mail: " + err.Error()}, true
	}
	reason := strings.TrimSpace(se.Error())
	switch code := se.ErrorCode(); {
	case cut:
		return quan.SendResult{Outcome: quan.RetryLater, Reason: "mail: cancelled: " + reason}, true
	case code >= 500:
		return quan.SendResult{Outcome: quan.FailedForGood, Reason: reason}, false
	case code >= 400:
		return quan.SendResult{Outcome: quan.RetryLater, Reason: reason}, false
	case se.Reason == gomail.ErrGetSender || se.Reason == gomail.ErrGetRcpts || se.Reason == gomail.ErrNoUnencoded:
		return quan.SendResult{Outcome: quan.FailedForGood, Reason: reason}, false
	}
	return quan.SendResult{Outcome: quan.RetryLater, Reason: reason}, true
}

func retry(results []quan.SendResult, idx []int, after time.Duration, reason string) {
	for _, i := range idx {
		results[i] = quan.SendResult{Outcome: quan.RetryLater, After: after, Reason: reason}
	}
}

// build turns m into a mail: its text and an unsubscribe footer, the
// List-Unsubscribe headers (RFC 2369, RFC 8058 one-click) and a
// Message-ID from m.ID, so a retry carries the same one.
func (s *Sender) build(m quan.Outgoing) (*gomail.Msg, error) {
	unsub := s.cfg.Unsubscribe(m)
	if !strings.HasPrefix(unsub, "https://") && !strings.HasPrefix(unsub, "http://") {
		return nil, fmt.Errorf("mail: unsubscribe link %q for message %s is not an http(s) URL", unsub, m.ID)
	}
	msg := gomail.NewMsg(gomail.WithNoDefaultUserAgent())
	if err := msg.From(s.ep.From); err != nil {
		return nil, fmt.Errorf("mail: from: %w", err)
	}
	if err := msg.To(m.To); err != nil {
		return nil, fmt.Errorf("mail: to %q: %w", m.To, err)
	}
	msg.Subject(m.Subject)
	msg.SetMessageIDWithValue(m.ID + "@" + s.domain)
	msg.SetDate()
	msg.SetGenHeaderPreformatted(gomail.HeaderListUnsubscribe, "<"+unsub+">")
	msg.SetGenHeaderPreformatted(gomail.HeaderListUnsubscribePost, "List-Unsubscribe=One-Click")
	msg.SetGenHeaderPreformatted("X-Quan-Message-Id", m.ID)
	msg.SetBodyString(gomail.TypeTextPlain, m.Text+footer(m.Lang, unsub))
	return msg, nil
}

// footer is the unsubscribe line every mail ends with.
func footer(lang quan.Lang, link string) string {
	if lang == quan.LangEN {
		return "\n\n--\nTo stop these emails, unsubscribe: " + link + "\n"
	}
	return "\n\n--\n不想再收到此类邮件？点此退订：" + link + "\n"
}

// get returns an idle connection or dials a new one, waiting for a slot
// while Conns are open.
func (s *Sender) get(ctx context.Context) (*conn, error) {
	select {
	case c := <-s.idle:
		return c, nil
	default:
	}
	select {
	case c := <-s.idle:
		return c, nil
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("mail: waiting for a connection: %w", ctx.Err())
	}
	var nc net.Conn
	c, err := s.client.DialToSMTPClientWithContext(context.WithValue(ctx, connKey{}, &nc))
	if err != nil {
		if nc != nil {
			nc.Close() // go-mail leaves it open when EHLO, STARTTLS or AUTH fail
		}
		<-s.slots
		if isAuthErr(err) {
			return nil, &authError{err}
		}
		return nil, fmt.Errorf("mail: connect %s:%d: %w", s.ep.Host, s.ep.Port, err)
	}
	return &conn{c: c, nc: nc}, nil
}

// put returns c to the pool, or closes it if the Sender is closed.
func (s *Sender) put(c *conn) {
	s.mu.Lock()
	if !s.done {
		s.idle <- c
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.discard(c)
}

// discard closes c, politely if it can, and frees its slot.
func (s *Sender) discard(c *conn) {
	c.nc.SetDeadline(time.Now().Add(time.Second))
	if err := c.c.Quit(); err != nil {
		c.nc.Close()
	}
	<-s.slots
}

// Close closes the idle connections; connections in use close when their
// Send ends. Safe to call twice.
func (s *Sender) Close() error {
	s.mu.Lock()
	s.done = true
	s.mu.Unlock()
	for {
		select {
		case c := <-s.idle:
			s.discard(c)
		default:
			return nil
		}
	}
}

type authError struct{ err error }

func (e *authError) Error() string { return "mail: smtp auth: " + e.err.Error() }
func (e *authError) Unwrap() error { return e.err }

func isAuth(err error) bool {
	var a *authError
	return errors.As(err, &a)
}

// isAuthErr recognises a refused login among go-mail's dial errors: "SMTP
// AUTH failed: 535 ...", or the server offering no SMTP AUTH or not the
// mechanism the URL asks for.
func isAuthErr(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "SMTP AUTH failed") || strings.Contains(s, "does not support SMTP AUTH") ||
		errors.Is(err, gomail.ErrPlainAuthNotSupported) || errors.Is(err, gomail.ErrLoginAuthNotSupported)
}
