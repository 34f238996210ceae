package sms_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/sms"
)

const secret = "a-shared-secret-of-32-bytes-long"

// gateway is an HTTP gateway speaking quan's protocol that the test
// starts: it checks every request's signature with the secret (401 if
// wrong), records the messages, and answers what answer says.
type gateway struct {
	srv      *httptest.Server
	discard  bool
	answer   func(w http.ResponseWriter, req []wireMessage) bool // true if it wrote the answer
	mu       sync.Mutex
	got      []wireMessage
	keys     []string
	requests atomic.Int64
	count    atomic.Int64
}

type wireMessage struct {
	ID       string            `json:"id"`
	Phone    string            `json:"phone"`
	Template string            `json:"template"`
	Kind     string            `json:"kind"`
	Lang     string            `json:"lang"`
	Params   map[string]string `json:"params"`
	Text     string            `json:"text"`
}

type result struct {
	ID         string  `json:"id"`
	Status     string  `json:"status"`
	Reason     string  `json:"reason,omitempty"`
	RetryAfter float64 `json:"retryAfter,omitempty"`
}

func startGateway(t testing.TB) *gateway {
	t.Helper()
	g := &gateway{}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.requests.Add(1)
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		if err := sms.Verify(secret, r.Header.Get(sms.HeaderTimestamp), r.Header.Get(sms.HeaderSignature), body, time.Now(), 5*time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var req struct {
			Messages []wireMessage `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if g.answer != nil && g.answer(w, req.Messages) {
			return
		}
		if !g.discard {
			g.mu.Lock()
			g.got = append(g.got, req.Messages...)
			g.keys = append(g.keys, r.Header.Get(sms.HeaderIdempotency))
			g.mu.Unlock()
		}
		g.count.Add(int64(len(req.Messages)))
		res := make([]result, 0, len(req.Messages))
		for _, m := range req.Messages {
			switch {
			case g.discard: // benchmarks: all sent
				res = append(res, result{ID: m.ID, Status: "sent"})
			case strings.HasSuffix(m.Phone, "0000"):
				res = append(res, result{ID: m.ID, Status: "failed", Reason: "isv.MOBILE_NUMBER_ILLEGAL"})
			case strings.HasSuffix(m.Phone, "1111"):
				res = append(res, result{ID: m.ID, Status: "retry", Reason: "busy", RetryAfter: 30})
			case strings.HasSuffix(m.Phone, "2222"): // left out of the answer
			default:
				res = append(res, result{ID: m.ID, Status: "sent"})
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"results": res})
	}))
	t.Cleanup(g.srv.Close)
	return g
}

func newSender(t testing.TB, url string, tweak func(*sms.Config)) *sms.Sender {
	t.Helper()
	cfg := sms.Config{URL: url, Secret: secret, Timeout: 2 * time.Second, Templates: map[string]string{"issued": "SMS_100001", "issued.en": "SMS_100002"}}
	if tweak != nil {
		tweak(&cfg)
	}
	s, err := sms.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func outgoing(id, phone string) quan.Outgoing {
	return quan.Outgoing{ID: id, UserID: 7, Channel: quan.NotifySMS, To: phone, Kind: quan.MessageIssued,
		Text: "您获得「新人券」：满100减20元，12-31 23:59前有效", Params: map[string]string{"name": "新人券", "offer": "满100减20元"}}
}

func TestSuccess(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	s := newSender(t, g.srv.URL, nil)
	en := outgoing("t1-u3-sms", "+14155552671")
	en.Lang = quan.LangEN
	msgs := []quan.Outgoing{outgoing("t1-u1-sms", "+8613812345678"), outgoing("t1-u2-sms", "+8613800000000"), en,
		outgoing("t1-u4-sms", "+8613811111111"), outgoing("t1-u5-sms", "+8613822222222"),
		{ID: "t1-u6", Channel: quan.NotifyEmail, To: "a@example.com", Text: "x"}}
	res := s.Send(context.Background(), msgs)
	want := []quan.SendResult{
		{Outcome: quan.Sent},
		{Outcome: quan.FailedForGood, Reason: "isv.MOBILE_NUMBER_ILLEGAL"},
		{Outcome: quan.Sent},
		{Outcome: quan.RetryLater, After: 30 * time.Second, Reason: "busy"},
		{Outcome: quan.RetryLater, Reason: "sms: the gateway gave no result for the message"},
	}
	for i, w := range want {
		if res[i] != w {
			t.Errorf("%s: %+v, want %+v", msgs[i].ID, res[i], w)
		}
	}
	if res[5].Outcome != quan.FailedForGood {
		t.Errorf("an email handed to SMS: %+v", res[5])
	}
	if n := g.requests.Load(); n != 1 {
		t.Errorf("%d requests, want one batch", n)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.got) != 5 {
		t.Fatalf("gateway got %d messages, want 5", len(g.got))
	}
	m := g.got[0]
	if m.ID != "t1-u1-sms" || m.Phone != "+8613812345678" || m.Template != "SMS_100001" || m.Kind != "issued" || m.Lang != "zh" ||
		m.Params["offer"] != "满100减20元" || !strings.HasPrefix(m.Text, "您获得") {
		t.Errorf("gateway got %+v", m)
	}
	if g.got[2].Template != "SMS_100002" || g.got[2].Lang != "en" {
		t.Errorf("an English message got template %q, lang %q", g.got[2].Template, g.got[2].Lang)
	}
	if !strings.HasPrefix(g.keys[0], "b-") {
		t.Errorf("a batch's Idempotency-Key is %q, want b-…", g.keys[0])
	}
}

func TestOnePerRequest(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	s := newSender(t, g.srv.URL, func(c *sms.Config) { c.MaxBatch = 1 })
	res := s.Send(context.Background(), []quan.Outgoing{outgoing("a1", "+8613812345678"), outgoing("a2", "+8613812345679")})
	if res[0].Outcome != quan.Sent || res[1].Outcome != quan.Sent || g.requests.Load() != 2 {
		t.Fatalf("results %+v over %d requests", res, g.requests.Load())
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !(g.keys[0] == "a1" && g.keys[1] == "a2" || g.keys[0] == "a2" && g.keys[1] == "a1") {
		t.Errorf("Idempotency-Keys %q, want the message ids", g.keys)
	}
}

func TestRetryLater(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		status int
		header string
		after  time.Duration
	}{
		{"TooManyRequests", http.StatusTooManyRequests, "7", 7 * time.Second},
		{"Unavailable", http.StatusServiceUnavailable, "", 0},
		{"InternalError", http.StatusInternalServerError, "", 0},
		{"RetryAfterDate", http.StatusTooManyRequests, "date", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := startGateway(t)
			g.answer = func(w http.ResponseWriter, _ []wireMessage) bool {
				switch tt.header {
				case "":
				case "date":
					w.Header().Set("Retry-After", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat))
				default:
					w.Header().Set("Retry-After", tt.header)
				}
				http.Error(w, "slow down", tt.status)
				return true
			}
			s := newSender(t, g.srv.URL, nil)
			res := s.Send(context.Background(), []quan.Outgoing{outgoing("a1", "+8613812345678"), outgoing("a2", "+8613812345679")})
			for _, r := range res {
				if r.Outcome != quan.RetryLater || !strings.Contains(r.Reason, fmt.Sprint(tt.status)) || !strings.Contains(r.Reason, "slow down") {
					t.Errorf("%+v, want retry with the status and body", r)
				}
				if tt.header == "date" {
					if r.After < 59*time.Minute || r.After > time.Hour {
						t.Errorf("After %v, want about an hour", r.After)
					}
				} else if r.After != tt.after {
					t.Errorf("After %v, want %v", r.After, tt.after)
				}
			}
		})
	}
}

func TestFailedForGood(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	g.answer = func(w http.ResponseWriter, _ []wireMessage) bool {
		http.Error(w, `{"error":"unknown template SMS_100001"}`, http.StatusUnprocessableEntity)
		return true
	}
	s := newSender(t, g.srv.URL, nil)
	res := s.Send(context.Background(), []quan.Outgoing{outgoing("a1", "+8613812345678")})
	if res[0].Outcome != quan.FailedForGood || !strings.Contains(res[0].Reason, "422") || !strings.Contains(res[0].Reason, "unknown template") {
		t.Fatalf("%+v, want failed with the status and body", res[0])
	}
}

// TestSignature: the test gateway verifies the HMAC with its secret; a
// sender with another secret is refused (401), which waits for the
// operator rather than failing the messages.
func TestSignature(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	good := newSender(t, g.srv.URL, nil)
	if res := good.Send(context.Background(), []quan.Outgoing{outgoing("a1", "+8613812345678")}); res[0].Outcome != quan.Sent {
		t.Fatalf("signed with the secret: %+v", res[0])
	}
	bad := newSender(t, g.srv.URL, func(c *sms.Config) { c.Secret = "another-secret-of-some-length" })
	res := bad.Send(context.Background(), []quan.Outgoing{outgoing("a2", "+8613812345678")})
	if res[0].Outcome != quan.RetryLater || res[0].After != sms.DefaultAuthRetry || !strings.Contains(res[0].Reason, "401") {
		t.Fatalf("signed with another secret: %+v, want retry after %v with the 401", res[0], sms.DefaultAuthRetry)
	}
	stale := newSender(t, g.srv.URL, func(c *sms.Config) { c.Now = func() time.Time { return time.Now().Add(-time.Hour) } })
	if res := stale.Send(context.Background(), []quan.Outgoing{outgoing("a3", "+8613812345678")}); res[0].Outcome != quan.RetryLater || !strings.Contains(res[0].Reason, "timestamp") {
		t.Fatalf("an hour-old timestamp: %+v, want refused", res[0])
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.got) != 1 || g.got[0].ID != "a1" {
		t.Fatalf("gateway accepted %+v, want only a1", g.got)
	}
}

func TestHang(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	g.answer = func(http.ResponseWriter, []wireMessage) bool { <-release; return true }
	s := newSender(t, g.srv.URL, func(c *sms.Config) { c.Timeout = 300 * time.Millisecond })
	res := s.Send(context.Background(), []quan.Outgoing{outgoing("a1", "+8613812345678")})
	if res[0].Outcome != quan.RetryLater || !strings.Contains(res[0].Reason, "did not answer within") {
		t.Fatalf("a hanging gateway: %+v, want retry after the timeout", res[0])
	}
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	url := g.srv.URL
	g.srv.Close()
	s := newSender(t, url, nil)
	if res := s.Send(context.Background(), []quan.Outgoing{outgoing("a1", "+8613812345678")}); res[0].Outcome != quan.RetryLater {
		t.Fatalf("a refused connection: %+v, want retry", res[0])
	}
	g2 := startGateway(t)
	g2.answer = func(w http.ResponseWriter, _ []wireMessage) bool { w.Write([]byte("<html>oops</html>")); return true }
	s2 := newSender(t, g2.srv.URL, nil)
	if res := s2.Send(context.Background(), []quan.Outgoing{outgoing("a1", "+8613812345678")}); res[0].Outcome != quan.RetryLater || !strings.Contains(res[0].Reason, "not JSON") {
		t.Fatalf("a 200 that is not the protocol: %+v, want retry", res[0])
	}
}

func TestBatchesAll(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	s := newSender(t, g.srv.URL, func(c *sms.Config) { c.MaxBatch = 7; c.Parallel = 3 })
	var msgs []quan.Outgoing
	for i := range 100 {
		msgs = append(msgs, outgoing(fmt.Sprintf("m%d", i), fmt.Sprintf("+86138%08d", i*3+5)))
	}
	for i, r := range s.Send(context.Background(), msgs) {
		if r.Outcome != quan.Sent {
			t.Fatalf("%s: %+v", msgs[i].ID, r)
		}
	}
	if n := g.requests.Load(); n != 15 {
		t.Errorf("%d requests, want 15 batches of at most 7", n)
	}
	seen := map[string]int{}
	g.mu.Lock()
	for _, m := range g.got {
		seen[m.ID]++
	}
	g.mu.Unlock()
	if len(seen) != 100 {
		t.Errorf("%d distinct messages arrived, want 100", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s arrived %d times", id, n)
		}
	}
}

func TestNew(t *testing.T) {
	for _, c := range []sms.Config{
		{URL: "ftp://gw.example.com/send", Secret: secret},
		{URL: "http://gw.example.com/send", Secret: secret},
		{URL: "https://gw.example.com/send", Secret: "short"},
		{URL: "not a url", Secret: secret},
	} {
		if _, err := sms.New(c); err == nil {
			t.Errorf("New(%q, %d-byte secret) succeeded", c.URL, len(c.Secret))
		}
	}
}
