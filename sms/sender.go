package sms

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/quanhq/quan"
)

var _ quan.Sender = (*Sender)(nil)

// Protocol headers.
const (
	HeaderTimestamp   = "X-Quan-Timestamp"
	HeaderSignature   = "X-Quan-Signature"
	HeaderIdempotency = "Idempotency-Key"
)

// Defaults.
const (
	DefaultMaxBatch = 500
	DefaultParallel = 4
	DefaultTimeout  = 10 * time.Second
	// DefaultAuthRetry is how long messages wait after the gateway refused
	// the signature (401, 403): the secret is the operator's to fix.
	DefaultAuthRetry = time.Minute
	minSecret        = 16
)

// Config configures a Sender. URL and Secret are required.
type Config struct {
	// URL is the gateway's endpoint (--sms-url); https, or http for a
	// loopback host.
	URL string
	// Secret keys the HMAC-SHA256 signature; at least 16 bytes.
	Secret string
	// Templates maps a message kind, or kind.lang ("issued.en"), to the
	// provider's template code; a kind not listed sends "quan_<kind>_<lang>".
	Templates map[string]string
	// MaxBatch is the most messages in one request; 0 is DefaultMaxBatch,
	// 1 sends one message a request.
	MaxBatch int
	// Parallel is how many requests are in flight at once; 0 is
	// DefaultParallel.
	Parallel int
	// Timeout bounds each request, answer included; 0 is DefaultTimeout.
	Timeout time.Duration
	// Client sends the requests; nil is a client of its own keeping
	// Parallel connections alive.
	Client *http.Client
	Now    func() time.Time // nil is time.Now
	Logger *slog.Logger     // nil discards
}

// Sender posts messages to a gateway in signed JSON batches, as the
// package documentation describes.
type Sender struct {
	cfg    Config
	client *http.Client
	log    *slog.Logger
}

// New returns a Sender for cfg.
func New(cfg Config) (*Sender, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("sms url: want https://host/path, e.g. https://gw.example.com/send")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, fmt.Errorf("sms url: http is only for localhost; use https")
		}
	default:
		return nil, fmt.Errorf("sms url: scheme %q: use https", u.Scheme)
	}
	if len(cfg.Secret) < minSecret {
		return nil, fmt.Errorf("sms secret: at least %d bytes", minSecret)
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = DefaultMaxBatch
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = DefaultParallel
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Sender{cfg: cfg, client: cfg.Client, log: cfg.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.client == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = cfg.Parallel
		s.client = &http.Client{Transport: t}
	}
	return s, nil
}

// wireMessage is one message as the protocol sends it.
type wireMessage struct {
	ID       string            `json:"id"`
	Phone    string            `json:"phone"`
	Template string            `json:"template"`
	Kind     quan.MessageKind  `json:"kind"`
	Lang     quan.Lang         `json:"lang"`
	Params   map[string]string `json:"params,omitempty"`
	Text     string            `json:"text"`
}

type wireRequest struct {
	Messages []wireMessage `json:"messages"`
}

type wireResult struct {
	ID         string  `json:"id"`
	Status     string  `json:"status"`
	Reason     string  `json:"reason,omitempty"`
	RetryAfter float64 `json:"retryAfter,omitempty"`
}

type wireResponse struct {
	Results []wireResult `json:"results"`
}

// Send implements quan.Sender: batches of MaxBatch, Parallel at a time.
func (s *Sender) Send(ctx context.Context, msgs []quan.Outgoing) []quan.SendResult {
	results := make([]quan.SendResult, len(msgs))
	var todo []int
	for i, m := range msgs {
		if err := m.Validate(); err != nil {
			results[i] = quan.SendResult{Outcome: quan.FailedForGood, Reason: err.Error()}
		} else if m.Channel != quan.NotifySMS {
			results[i] = quan.SendResult{Outcome: quan.FailedForGood, Reason: fmt.Sprintf("sms: message %s is for channel %s", m.ID, m.Channel)}
		} else {
			todo = append(todo, i)
		}
	}
	sem := make(chan struct{}, s.cfg.Parallel)
	var wg sync.WaitGroup
	for len(todo) > 0 {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			// The batches not yet posted wait for the next try.
			setAll(results, todo, quan.SendResult{Outcome: quan.RetryLater, Reason: "sms: " + ctx.Err().Error()})
			todo = nil
			continue
		}
		k := min(s.cfg.MaxBatch, len(todo))
		batch := todo[:k]
		todo = todo[k:]
		wg.Go(func() {
			defer func() { <-sem }()
			s.post(ctx, msgs, batch, results)
		})
	}
	wg.Wait()
	return results
}

func setAll(results []quan.SendResult, idx []int, r quan.SendResult) {
	for _, i := range idx {
		results[i] = r
	}
}

// post sends one batch and writes its results.
func (s *Sender) post(ctx context.Context, msgs []quan.Outgoing, batch []int, results []quan.SendResult) {
	req := wireRequest{Messages: make([]wireMessage, len(batch))}
	for j, i := range batch {
		m := msgs[i]
		req.Messages[j] = wireMessage{ID: m.ID, Phone: m.To, Template: s.template(m), Kind: m.Kind, Lang: lang(m.Lang), Params: m.Params, Text: m.Text}
	}
	body, err := json.Marshal(req)
	if err != nil {
		setAll(results, batch, quan.SendResult{Outcome: quan.FailedForGood, Reason: "sms: encode: " + err.Error()})
		return
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.URL, bytes.NewReader(body))
	if err != nil {
		setAll(results, batch, quan.SendResult{Outcome: quan.RetryLater, Reason: "sms: " + err.Error()})
		return
	}
	ts := strconv.FormatInt(s.cfg.Now().Unix(), 10)
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set(HeaderTimestamp, ts)
	hr.Header.Set(HeaderSignature, Sign(s.cfg.Secret, ts, body))
	hr.Header.Set(HeaderIdempotency, idempotencyKey(req.Messages))
	resp, err := s.client.Do(hr)
	if err != nil {
		reason := "sms: " + err.Error()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			reason = fmt.Sprintf("sms: the gateway did not answer within %v", s.cfg.Timeout)
		}
		setAll(results, batch, quan.SendResult{Outcome: quan.RetryLater, Reason: reason})
		return
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		setAll(results, batch, quan.SendResult{Outcome: quan.RetryLater, Reason: "sms: reading the answer: " + err.Error()})
		return
	}
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		s.perMessage(msgs, batch, raw, results)
	case code == http.StatusTooManyRequests || code >= 500:
		setAll(results, batch, quan.SendResult{Outcome: quan.RetryLater, After: retryAfter(resp.Header.Get("Retry-After"), s.cfg.Now()), Reason: status(resp, raw)})
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		s.log.Error("sms gateway refused quan's signature: check the secret", "status", code, "body", snippet(raw))
		setAll(results, batch, quan.SendResult{Outcome: quan.RetryLater, After: DefaultAuthRetry, Reason: status(resp, raw)})
	case code >= 400:
		setAll(results, batch, quan.SendResult{Outcome: quan.FailedForGood, Reason: status(resp, raw)})
	default:
		setAll(results, batch, quan.SendResult{Outcome: quan.RetryLater, Reason: status(resp, raw)})
	}
}

// perMessage reads a 2xx answer's per-message results; a message the
// answer leaves out, or an answer that does not parse, is RetryLater.
func (s *Sender) perMessage(msgs []quan.Outgoing, batch []int, raw []byte, results []quan.SendResult) {
	var wr wireResponse
	if err := json.Unmarshal(raw, &wr); err != nil {
		setAll(results, batch, quan.SendResult{Outcome: quan.RetryLater, Reason: "sms: the gateway's answer is not JSON results: " + snippet(raw)})
		return
	}
	byID := make(map[string]wireResult, len(wr.Results))
	for _, r := range wr.Results {
		byID[r.ID] = r
	}
	for _, i := range batch {
		r, ok := byID[msgs[i].ID]
		switch {
		case !ok:
			results[i] = quan.SendResult{Outcome: quan.RetryLater, Reason: "sms: the gateway gave no result for the message"}
		case r.Status == "sent":
			results[i] = quan.SendResult{Outcome: quan.Sent}
		case r.Status == "failed":
			results[i] = quan.SendResult{Outcome: quan.FailedForGood, Reason: orDefault(r.Reason, "failed at the gateway")}
		default: // "retry", or a status this version does not know
			after := time.Duration(0)
			if r.RetryAfter > 0 {
				after = time.Duration(r.RetryAfter * float64(time.Second))
			}
			results[i] = quan.SendResult{Outcome: quan.RetryLater, After: after, Reason: orDefault(r.Reason, "gateway status "+strconv.Quote(r.Status))}
		}
	}
}

// template returns the provider's template code for m.
func (s *Sender) template(m quan.Outgoing) string {
	l := lang(m.Lang)
	if c, ok := s.cfg.Templates[string(m.Kind)+"."+string(l)]; ok {
		return c
	}
	if c, ok := s.cfg.Templates[string(m.Kind)]; ok {
		return c
	}
	return "quan_" + string(m.Kind) + "_" + string(l)
}

func lang(l quan.Lang) quan.Lang {
	if l == quan.LangEN {
		return l
	}
	return quan.LangZH
}

// Sign returns the X-Quan-Signature value for a request: "v1=" and the hex
// HMAC-SHA256 of timestamp, '.', body, keyed with secret. Gateways compare
// it with hmac.Equal.
func Sign(secret, timestamp string, body []byte) string {
	h := hmac.New(sha256.New, []byte(secret))
	h.Write([]byte(timestamp))
	h.Write([]byte{'.'})
	h.Write(body)
	return "v1=" + hex.EncodeToString(h.Sum(nil))
}

// Verify checks a request's signature and that its timestamp is within
// skew of now: what a gateway or relay written in Go does first.
func Verify(secret, timestamp, signature string, body []byte, now time.Time, skew time.Duration) error {
	sec, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return fmt.Errorf("sms: timestamp %q is not unix seconds", timestamp)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > skew || d < -skew {
		return fmt.Errorf("sms: timestamp %s is %v from now", timestamp, d.Round(time.Second))
	}
	if !hmac.Equal([]byte(signature), []byte(Sign(secret, timestamp, body))) {
		return errors.New("sms: signature does not match")
	}
	return nil
}

// idempotencyKey is the message id for one message, and "b-" and a hash
// of the ids for a batch.
func idempotencyKey(ms []wireMessage) string {
	if len(ms) == 1 {
		return ms[0].ID
	}
	h := sha256.New()
	for _, m := range ms {
		h.Write([]byte(m.ID))
		h.Write([]byte{0})
	}
	return "b-" + hex.EncodeToString(h.Sum(nil)[:16])
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

func status(resp *http.Response, raw []byte) string {
	s := "sms gateway: " + resp.Status
	if b := snippet(raw); b != "" {
		s += ": " + b
	}
	return s
}

// snippet is the start of a body, for a reason.
func snippet(raw []byte) string {
	s := strings.TrimSpace(string(raw))
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "") + "…"
	}
	return s
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
