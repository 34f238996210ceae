package mail_test

import (
	"context"
	"fmt"
	"io"
	"mime/quotedprintable"
	netmail "net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/mail"
)

func unsubscribe(t testing.TB) func(quan.Outgoing) string {
	t.Helper()
	f, err := mail.UnsubscribeLink("https://quan.example.com/unsubscribe", func(m quan.Outgoing) string {
		return fmt.Sprintf("u%d.email.sig", m.UserID)
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func newSender(t testing.TB, url string, tweak func(*mail.Config)) *mail.Sender {
	t.Helper()
	cfg := mail.Config{URL: url, Unsubscribe: unsubscribe(t), Timeout: 5 * time.Second}
	if tweak != nil {
		tweak(&cfg)
	}
	s, err := mail.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func outgoing(id, to string) quan.Outgoing {
	return quan.Outgoing{ID: id, UserID: 7, Channel: quan.NotifyEmail, To: to, Kind: quan.MessageIssued,
		Subject: "您获得一张优惠券：新人券", Text: "您好，\n\n优惠券「新人券」已发放到您的账户：满100减20元。"}
}

func TestDelivery(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "quan", "s3cret", nil)
	s := newSender(t, "smtp://quan:s3cret@"+srv.addr+"?from=noreply@quan.test&tls=none", nil)
	res := s.Send(context.Background(), []quan.Outgoing{outgoing("task42-u7-email", "li.lei@example.com")})
	if res[0].Outcome != quan.Sent {
		t.Fatalf("result %+v, want sent", res[0])
	}
	got := srv.received()
	if len(got) != 1 || got[0].from != "noreply@quan.test" || len(got[0].to) != 1 || got[0].to[0] != "li.lei@example.com" {
		t.Fatalf("server received %+v", got)
	}
	data := got[0].data
	for name, want := range map[string]string{
		"Message-ID":            "<task42-u7-email@quan.test>",
		"List-Unsubscribe":      "<https://quan.example.com/unsubscribe?t=u7.email.sig>",
		"List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
		"X-Quan-Message-Id":     "task42-u7-email",
	} {
		if v, err := header(data, name); err != nil || v != want {
			t.Errorf("%s: %q, %v; want %q", name, v, err, want)
		}
	}
	msg, err := netmail.ReadMessage(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	subject, err := new(mimeDecoder).decode(msg.Header.Get("Subject"))
	if err != nil || subject != "您获得一张优惠券：新人券" {
		t.Errorf("subject %q, %v", subject, err)
	}
	body, err := io.ReadAll(quotedprintable.NewReader(msg.Body))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), "满100减20元") || !strings.Contains(string(body), "退订：https://quan.example.com/unsubscribe?t=u7.email.sig") {
		t.Errorf("body lacks the text or the unsubscribe link:\n%s", body)
	}
}

func TestStartTLS(t *testing.T) {
	t.Parallel()
	serverTLS, clientTLS := selfSigned(t)
	srv := startServer(t, "quan", "s3cret", serverTLS)
	s := newSender(t, "smtp://quan:s3cret@"+srv.addr+"?from=noreply@quan.test", func(c *mail.Config) { c.TLSConfig = clientTLS })
	if err := s.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	if res := s.Send(context.Background(), []quan.Outgoing{outgoing("a1", "a@example.com")}); res[0].Outcome != quan.Sent {
		t.Fatalf("over STARTTLS: %+v", res[0])
	}
	// Without the private CA the certificate does not verify: nothing is
	// sent in the clear instead.
	bare := newSender(t, "smtp://quan:s3cret@"+srv.addr+"?from=noreply@quan.test", nil)
	if res := bare.Send(context.Background(), []quan.Outgoing{outgoing("a2", "a@example.com")}); res[0].Outcome != quan.RetryLater || !strings.Contains(res[0].Reason, "certificate") {
		t.Fatalf("an unverified server: %+v, want retry about the certificate", res[0])
	}
	if n := len(srv.received()); n != 1 {
		t.Fatalf("server received %d mails, want 1", n)
	}
}

// TestAuthFailure: a refused login is a clear error from Check and makes
// every message RetryLater with a wait — the password is wrong, not the
// recipients.
func TestAuthFailure(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "quan", "s3cret", nil)
	s := newSender(t, "smtp://quan:wrong@"+srv.addr+"?from=noreply@quan.test&tls=none", nil)
	err := s.Check(context.Background())
	if err == nil || !strings.Contains(err.Error(), "smtp auth") || !strings.Contains(err.Error(), "535") {
		t.Fatalf("Check = %v, want an smtp auth error with the 535", err)
	}
	res := s.Send(context.Background(), []quan.Outgoing{outgoing("a1", "a@example.com"), outgoing("a2", "b@example.com")})
	for i, r := range res {
		if r.Outcome != quan.RetryLater || r.After != mail.DefaultAuthRetry || !strings.Contains(r.Reason, "535") {
			t.Errorf("message %d: %+v, want retry after %v with the 535", i, r, mail.DefaultAuthRetry)
		}
	}
	if n := len(srv.received()); n != 0 {
		t.Fatalf("server received %d mails", n)
	}
}

func TestAnswers(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "", "", nil)
	s := newSender(t, "smtp://"+srv.addr+"?from=noreply@quan.test&tls=none", nil)
	msgs := []quan.Outgoing{
		outgoing("m1", "ok1@example.com"),
		outgoing("m2", "temp@example.com"),
		outgoing("m3", "perm@example.com"),
		outgoing("m4", "ok2@example.com"),
		{ID: "bad id", Channel: quan.NotifyEmail, To: "x@example.com", Text: "x"},
		{ID: "m6", Channel: quan.NotifySMS, To: "+8613812345678", Text: "x"},
	}
	res := s.Send(context.Background(), msgs)
	want := []quan.SendOutcome{quan.Sent, quan.RetryLater, quan.FailedForGood, quan.Sent, quan.FailedForGood, quan.FailedForGood}
	for i, r := range res {
		if r.Outcome != want[i] {
			t.Errorf("%s: %+v, want %s", msgs[i].ID, r, want[i])
		}
	}
	if !strings.Contains(res[1].Reason, "451") || !strings.Contains(res[2].Reason, "550") || !strings.Contains(res[2].Reason, "No such user here") {
		t.Errorf("reasons %q, %q: want the server's replies", res[1].Reason, res[2].Reason)
	}
	if n := len(srv.received()); n != 2 {
		t.Errorf("server received %d mails, want 2", n)
	}
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	s := newSender(t, "smtp://127.0.0.1:1?from=noreply@quan.test&tls=none", nil)
	if res := s.Send(context.Background(), []quan.Outgoing{outgoing("m1", "a@example.com")}); res[0].Outcome != quan.RetryLater {
		t.Fatalf("refused connection: %+v, want retry", res[0])
	}
}

// TestTimeout: a server that takes longer than Timeout, or a cancelled
// context, cuts the send short and leaves the messages to retry.
func TestTimeout(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "", "", nil)
	s := newSender(t, "smtp://"+srv.addr+"?from=noreply@quan.test&tls=none", func(c *mail.Config) { c.Timeout = 500 * time.Millisecond })
	res := s.Send(context.Background(), []quan.Outgoing{outgoing("m1", "slow@example.com")})
	if res[0].Outcome != quan.RetryLater {
		t.Fatalf("a hanging server: %+v, want retry", res[0])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	s2 := newSender(t, "smtp://"+srv.addr+"?from=noreply@quan.test&tls=none", nil)
	res = s2.Send(ctx, []quan.Outgoing{outgoing("m2", "slow@example.com")})
	if res[0].Outcome != quan.RetryLater || !strings.Contains(res[0].Reason, "cancel") {
		t.Fatalf("a cancelled send: %+v, want retry", res[0])
	}
	// The pool recovers: the next mail goes out on a fresh connection.
	if res := s2.Send(context.Background(), []quan.Outgoing{outgoing("m3", "a@example.com")}); res[0].Outcome != quan.Sent {
		t.Fatalf("after a cut: %+v", res[0])
	}
}

// TestBatchReusesConnections sends many mails in several batches and
// checks every one arrived once, over no more than Conns connections.
func TestBatchReusesConnections(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "", "", nil)
	s := newSender(t, "smtp://"+srv.addr+"?from=noreply@quan.test&tls=none", func(c *mail.Config) { c.Conns = 3 })
	seen := map[string]int{}
	for b := range 3 {
		var msgs []quan.Outgoing
		for i := range 200 {
			msgs = append(msgs, outgoing(fmt.Sprintf("b%d-m%d", b, i), fmt.Sprintf("u%d@example.com", i)))
		}
		for i, r := range s.Send(context.Background(), msgs) {
			if r.Outcome != quan.Sent {
				t.Fatalf("%s: %+v", msgs[i].ID, r)
			}
		}
	}
	for _, m := range srv.received() {
		id, _ := header(m.data, "X-Quan-Message-Id")
		seen[id]++
	}
	if len(seen) != 600 {
		t.Errorf("%d distinct mails arrived, want 600", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s arrived %d times", id, n)
		}
	}
	if c := srv.conns.Load(); c > 3 {
		t.Errorf("%d connections, want at most 3", c)
	}
}

// TestIdleConnectionClosed: a pooled connection the server closed while
// idle is found dead by its NOOP and the batch goes out on a new one.
func TestIdleConnectionClosed(t *testing.T) {
	t.Parallel()
	srv := startServerWith(t, "", "", nil, func(s *smtp.Server) { s.ReadTimeout = 200 * time.Millisecond })
	s := newSender(t, "smtp://"+srv.addr+"?from=noreply@quan.test&tls=none", func(c *mail.Config) { c.Conns = 1 })
	if res := s.Send(context.Background(), []quan.Outgoing{outgoing("m1", "a@example.com")}); res[0].Outcome != quan.Sent {
		t.Fatalf("first: %+v", res[0])
	}
	time.Sleep(500 * time.Millisecond) // past the server's idle timeout
	if res := s.Send(context.Background(), []quan.Outgoing{outgoing("m2", "a@example.com")}); res[0].Outcome != quan.Sent {
		t.Fatalf("after the server closed the idle connection: %+v, want sent on a new one", res[0])
	}
	if n := srv.conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

func TestParseURL(t *testing.T) {
	ok := map[string]mail.Endpoint{
		"smtp://u:p@mail.example.com?from=noreply@x.com":       {Host: "mail.example.com", Port: 587, User: "u", Password: "p", From: "noreply@x.com", TLS: mail.TLSStartTLS, Auth: "plain"},
		"smtps://u:p@mail.example.com?from=a@x.com&auth=LOGIN": {Host: "mail.example.com", Port: 465, User: "u", Password: "p", From: "a@x.com", TLS: mail.TLSImplicit, Auth: "login"},
		"smtp://localhost:2525?from=a@x.com&tls=none":          {Host: "localhost", Port: 2525, From: "a@x.com", TLS: mail.TLSNone},
		"smtp://[::1]:25?from=a@x.com&tls=none":                {Host: "::1", Port: 25, From: "a@x.com", TLS: mail.TLSNone},
	}
	for in, want := range ok {
		got, err := mail.ParseURL(in)
		if err != nil || got != want {
			t.Errorf("ParseURL(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	bad := map[string]string{
		"http://h?from=a@x.com":               "scheme",
		"smtp://?from=a@x.com":                "no host",
		"smtp://h:0?from=a@x.com":             "port",
		"smtp://h:99999?from=a@x.com":         "port",
		"smtp://h":                            "from: missing",
		"smtp://h?from=nobody":                "from:",
		"smtp://h?from=a@x.com&tls=none":      "tls=none",
		"smtp://h?from=a@x.com&tls=ssl":       "tls \"ssl\"",
		"smtps://h?from=a@x.com&tls=starttls": "tls=starttls",
		"smtp://h?from=a@x.com&auth=plain":    "no user",
		"smtp://u:p@h?from=a@x.com&auth=cram": "auth \"cram\"",
		"smtp://h/x?from=a@x.com":             "path",
		"smtp://h?from=a@x.com&form=b":        "unknown parameter \"form\"",
		"smtp://u:p%zz@h?from=a@x.com":        "not a URL",
		"smtp://:secret@h?from=a@x.com":       "user is empty",
	}
	for in, part := range bad {
		_, err := mail.ParseURL(in)
		if err == nil || !strings.Contains(err.Error(), part) {
			t.Errorf("ParseURL(%q) = %v, want an error naming %q", in, err, part)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("ParseURL(%q) error %q shows the password", in, err)
		}
	}
}

func TestNewRequiresUnsubscribe(t *testing.T) {
	if _, err := mail.New(mail.Config{URL: "smtp://localhost?from=a@x.com&tls=none"}); err == nil || !strings.Contains(err.Error(), "nsubscribe") {
		t.Fatalf("New without Unsubscribe = %v", err)
	}
}

// TestConcurrentSendsShareConns: Sends at once that need more
// connections than Conns take turns on the pool: a Send waiting for a
// slot gets a connection another puts back (it used to wait for a slot
// that idle connections kept for ever).
func TestConcurrentSendsShareConns(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "", "", nil)
	srv.discard = true
	s := newSender(t, "smtp://"+srv.addr+"?from=noreply@quan.test&tls=none", func(c *mail.Config) { c.Conns = 1 })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			msgs := make([]quan.Outgoing, 200)
			for i := range msgs {
				msgs[i] = outgoing(fmt.Sprintf("w%d-%d", w, i), fmt.Sprintf("u%d@example.com", i))
			}
			for i, r := range s.Send(ctx, msgs) {
				if r.Outcome != quan.Sent {
					t.Errorf("send %d, message %d: %+v", w, i, r)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := srv.count.Load(); n != 600 {
		t.Errorf("the server received %d mails, want 600", n)
	}
}
