package notify_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/testrig"
	"github.com/quanhq/quan/mail"
	"github.com/quanhq/quan/notify"
	"github.com/quanhq/quan/sms"
)

func noonCST(day int) time.Time { return time.Date(2026, 3, day, 12, 0, 0, 0, cst) }

var cst = time.FixedZone("CST", 8*3600)

// gateway is an SMS gateway speaking quan's protocol (package sms). A
// phone's script gives its answers in turn ("sent", "retry", "failed");
// past the script, or without one, it answers sent.
type gateway struct {
	srv *httptest.Server

	mu       sync.Mutex
	scripts  map[string][]string
	received []string // message ids, in arrival order
}

func startGateway(t *testing.T, scripts map[string][]string) *gateway {
	g := &gateway{scripts: scripts}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				ID, Phone, Text string
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		type result struct {
			ID     string `json:"id"`
			Status string `json:"status"`
			Reason string `json:"reason,omitempty"`
		}
		var out struct {
			Results []result `json:"results"`
		}
		g.mu.Lock()
		for _, m := range req.Messages {
			status := "sent"
			if s := g.scripts[m.Phone]; len(s) > 0 {
				status, g.scripts[m.Phone] = s[0], s[1:]
			}
			if status == "sent" {
				g.received = append(g.received, m.ID)
			}
			out.Results = append(out.Results, result{ID: m.ID, Status: status, Reason: "gateway says " + status})
		}
		g.mu.Unlock()
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(g.srv.Close)
	return g
}

func (g *gateway) ids() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.received)
}

func (g *gateway) sender(t *testing.T) *sms.Sender {
	t.Helper()
	s, err := sms.New(sms.Config{URL: g.srv.URL, Secret: "0123456789abcdef0123"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func smsTo(user int64, phone string) *quan.Notification {
	return &quan.Notification{Source: "task:1", UserID: user, Channel: quan.NotifySMS, Address: phone, Kind: quan.MessageIssued,
		Vars: quan.MessageVars{TemplateName: "新人券", AmountOff: 2000, Threshold: 10000, ValidUntil: noonCST(31)}}
}

func recordAll(t *testing.T, s quan.NotificationStore, now time.Time, ns ...*quan.Notification) {
	t.Helper()
	if n, err := s.RecordNotifications(t.Context(), now, ns); err != nil || n != len(ns) {
		t.Fatalf("RecordNotifications = %d, %v", n, err)
	}
}

func status(t *testing.T, s quan.NotificationStore, user int64, ch quan.NotifyType) *quan.Notification {
	t.Helper()
	n, err := s.Notification(t.Context(), "task:1", user, ch)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func dispatchOnce(t *testing.T, d *notify.Dispatcher, ch quan.NotifyType) int {
	t.Helper()
	n, err := d.DispatchOnce(t.Context(), ch)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestDispatchSMS(t *testing.T) {
	st := testrig.Store(t)
	clock := testrig.NewClock(noonCST(2))
	gw := startGateway(t, map[string][]string{
		"+8613800000002": {"retry"},
		"+8613800000003": {"failed"},
	})
	recordAll(t, st, clock.Now(), smsTo(1, "+8613800000001"), smsTo(2, "+8613800000002"), smsTo(3, "+8613800000003"), smsTo(4, "+8613800000004"))
	if _, err := st.UpdateContact(t.Context(), 4, clock.Now(), func(c *quan.Contact) error {
		c.OptOut = []quan.NotifyType{quan.NotifySMS}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	d := &notify.Dispatcher{Store: st, Contacts: st, Senders: map[quan.NotifyType]quan.Sender{quan.NotifySMS: gw.sender(t)},
		Quiet: notify.DefaultQuietHours, Owner: "d1", Now: clock.At()}
	if n := dispatchOnce(t, d, quan.NotifySMS); n != 4 {
		t.Fatalf("took %d, want 4", n)
	}
	if got := status(t, st, 1, quan.NotifySMS); got.Status != quan.NotificationSent || got.Attempts != 1 {
		t.Errorf("user 1: %+v, want sent", got)
	}
	retry := status(t, st, 2, quan.NotifySMS)
	if retry.Status != quan.NotificationDeferred || !retry.NextAt.Equal(clock.Now().Add(30*time.Second)) || retry.Reason != "gateway says retry" {
		t.Errorf("user 2: %+v, want deferred 30 s", retry)
	}
	if got := status(t, st, 3, quan.NotifySMS); got.Status != quan.NotificationFailed || got.Reason != "gateway says failed" {
		t.Errorf("user 3: %+v, want failed with the gateway's reason", got)
	}
	if got := status(t, st, 4, quan.NotifySMS); got.Status != quan.NotificationFailed || got.Reason != quan.ReasonOptedOut {
		t.Errorf("user 4: %+v, want failed opted_out", got)
	}
	if n := dispatchOnce(t, d, quan.NotifySMS); n != 0 {
		t.Errorf("took %d before the retry was due", n)
	}
	clock.Add(30 * time.Second)
	if n := dispatchOnce(t, d, quan.NotifySMS); n != 1 {
		t.Fatalf("took %d at the retry, want 1", n)
	}
	if got := status(t, st, 2, quan.NotifySMS); got.Status != quan.NotificationSent || got.Attempts != 2 {
		t.Errorf("user 2 after the retry: %+v, want sent at attempt 2", got)
	}
	if got, want := gw.ids(), []string{"task.1_1_sms", "task.1_2_sms"}; !slices.Equal(got, want) {
		t.Errorf("the gateway sent %v, want %v", got, want)
	}
	if s := d.Stats(); s != (quan.DispatchStats{Sent: 2, Retried: 1, Failed: 1, OptedOut: 1}) {
		t.Errorf("stats %+v", s)
	}
}

func TestDispatchQuietHours(t *testing.T) {
	st := testrig.Store(t)
	clock := testrig.NewClock(time.Date(2026, 3, 2, 23, 0, 0, 0, cst))
	gw := startGateway(t, nil)
	recordAll(t, st, clock.Now(), smsTo(1, "+8613800000001"))
	d := &notify.Dispatcher{Store: st, Contacts: st, Senders: map[quan.NotifyType]quan.Sender{quan.NotifySMS: gw.sender(t)},
		Quiet: notify.DefaultQuietHours, Owner: "d1", Now: clock.At()}
	dispatchOnce(t, d, quan.NotifySMS)
	morning := time.Date(2026, 3, 3, 8, 0, 0, 0, cst)
	if got := status(t, st, 1, quan.NotifySMS); got.Status != quan.NotificationDeferred || !got.NextAt.Equal(morning) || got.Attempts != 0 {
		t.Fatalf("at 23:00: %+v, want deferred to 08:00 without a try", got)
	}
	clock.Set(morning.Add(-time.Second))
	if n := dispatchOnce(t, d, quan.NotifySMS); n != 0 || len(gw.ids()) != 0 {
		t.Fatalf("sent before 08:00")
	}
	clock.Set(morning)
	dispatchOnce(t, d, quan.NotifySMS)
	if got := status(t, st, 1, quan.NotifySMS); got.Status != quan.NotificationSent || got.Attempts != 1 || len(gw.ids()) != 1 {
		t.Errorf("at 08:00: %+v, gateway %v; want sent once", got, gw.ids())
	}
}

func TestQuietHoursUntil(t *testing.T) {
	q, err := notify.ParseQuietHours("22:00-08:00", cst)
	if err != nil {
		t.Fatal(err)
	}
	day := func(d, h, m int) time.Time { return time.Date(2026, 3, d, h, m, 0, 0, cst) }
	for _, c := range []struct {
		now  time.Time
		end  time.Time
		want bool
	}{
		{day(2, 21, 59), time.Time{}, false},
		{day(2, 22, 0), day(3, 8, 0), true},
		{day(3, 7, 59), day(3, 8, 0), true},
		{day(3, 8, 0), time.Time{}, false},
	} {
		end, quiet := q.Until(c.now)
		if quiet != c.want || !end.Equal(c.end) {
			t.Errorf("Until(%s) = %s, %v; want %s, %v", c.now, end, quiet, c.end, c.want)
		}
	}
	if q, _ := notify.ParseQuietHours("off", nil); q != (notify.QuietHours{}) {
		t.Errorf("off parsed as %+v", q)
	}
	for _, bad := range []string{"22-08", "25:00-08:00", "08:00-08:00"} {
		if _, err := notify.ParseQuietHours(bad, nil); err == nil {
			t.Errorf("ParseQuietHours(%q) took it", bad)
		}
	}
}

// TestDispatchSharedWork runs two dispatchers on one store at once: every
// message is sent exactly once.
func TestDispatchSharedWork(t *testing.T) {
	st := testrig.Store(t)
	clock := testrig.NewClock(noonCST(2))
	gw := startGateway(t, nil)
	const n = 300
	ns := make([]*quan.Notification, n)
	for i := range ns {
		ns[i] = smsTo(int64(i+1), fmt.Sprintf("+86138%08d", i+1))
	}
	recordAll(t, st, clock.Now(), ns...)
	var wg sync.WaitGroup
	var stats [2]quan.DispatchStats
	for i := range 2 {
		d := &notify.Dispatcher{Store: st, Contacts: st, Senders: map[quan.NotifyType]quan.Sender{quan.NotifySMS: gw.sender(t)},
			Owner: fmt.Sprintf("d%d", i), Batch: 16, Now: clock.At()}
		wg.Go(func() {
			for {
				took, err := d.DispatchOnce(t.Context(), quan.NotifySMS)
				if err != nil {
					t.Error(err)
					return
				}
				if took == 0 {
					stats[i] = d.Stats()
					return
				}
			}
		})
	}
	wg.Wait()
	ids := gw.ids()
	slices.Sort(ids)
	if len(ids) != n || len(slices.Compact(ids)) != n {
		t.Errorf("the gateway got %d messages, %d distinct; want %d once each", len(gw.ids()), len(ids), n)
	}
	if stats[0].Sent+stats[1].Sent != n || stats[0].Sent == 0 || stats[1].Sent == 0 {
		t.Logf("stats %+v", stats) // both usually share; only the total is promised
	}
	if stats[0].Sent+stats[1].Sent != n {
		t.Errorf("sent %d + %d, want %d", stats[0].Sent, stats[1].Sent, n)
	}
	counts, err := st.NotificationCounts(t.Context(), "task:1")
	if err != nil || len(counts) != 1 || counts[0].Status != quan.NotificationSent || counts[0].Count != n {
		t.Errorf("counts %v, %v; want %d sent", counts, err, n)
	}
}

// dying sends through its Sender and then kills the dispatcher's
// process: the store it records through (crashed) takes nothing more.
type dying struct {
	quan.Sender
	dead *atomic.Bool
}

func (d dying) Send(ctx context.Context, msgs []quan.Outgoing) []quan.SendResult {
	rs := d.Sender.Send(ctx, msgs)
	d.dead.Store(true)
	return rs
}

// crashed is the store as a process that died sees it: nothing it
// records after dead arrives.
type crashed struct {
	quan.NotificationStore
	dead *atomic.Bool
}

func (c crashed) FinishNotifications(ctx context.Context, owner string, now time.Time, rs []quan.NotificationResult) (int, error) {
	if c.dead.Load() {
		return 0, errors.New("killed")
	}
	return c.NotificationStore.FinishNotifications(ctx, owner, now, rs)
}

// TestDispatchKilled: a dispatcher dies between the gateway's acceptance
// and its record. After the lease another takes the batch and sends it
// again with the same ids, counting the possible duplicates.
func TestDispatchKilled(t *testing.T) {
	st := testrig.Store(t)
	clock := testrig.NewClock(noonCST(2))
	gw := startGateway(t, nil)
	recordAll(t, st, clock.Now(), smsTo(1, "+8613800000001"), smsTo(2, "+8613800000002"))
	dead := new(atomic.Bool)
	a := &notify.Dispatcher{Store: crashed{st, dead}, Contacts: st, Senders: map[quan.NotifyType]quan.Sender{quan.NotifySMS: dying{gw.sender(t), dead}},
		Owner: "a", Lease: time.Minute, Now: clock.At()}
	if _, err := a.DispatchOnce(t.Context(), quan.NotifySMS); err == nil {
		t.Fatal("the dying dispatcher recorded its batch")
	}
	if got := status(t, st, 1, quan.NotifySMS); got.Status != quan.NotificationQueued {
		t.Fatalf("after the crash: %+v, want still queued", got)
	}
	b := &notify.Dispatcher{Store: st, Contacts: st, Senders: map[quan.NotifyType]quan.Sender{quan.NotifySMS: gw.sender(t)},
		Owner: "b", Now: clock.At()}
	clock.Add(59 * time.Second)
	if n := dispatchOnce(t, b, quan.NotifySMS); n != 0 {
		t.Fatalf("b took %d during a's lease", n)
	}
	clock.Add(time.Second)
	if n := dispatchOnce(t, b, quan.NotifySMS); n != 2 {
		t.Fatalf("b took %d after a's lease, want 2", n)
	}
	for _, u := range []int64{1, 2} {
		if got := status(t, st, u, quan.NotifySMS); got.Status != quan.NotificationSent || got.Attempts != 2 {
			t.Errorf("user %d: %+v, want sent at attempt 2", u, got)
		}
	}
	want := []string{"task.1_1_sms", "task.1_2_sms", "task.1_1_sms", "task.1_2_sms"}
	got := gw.ids()
	if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		t.Errorf("the gateway got %v, want each id twice, the same ids", got)
	}
	if s := b.Stats(); s.PossibleDuplicates != 2 || s.Sent != 2 {
		t.Errorf("b's stats %+v, want 2 possible duplicates", s)
	}
}

// stopping cancels the dispatcher's context once its Sender returns: the
// process is told to stop while a batch is out.
type stopping struct {
	quan.Sender
	stop context.CancelFunc
}

func (s stopping) Send(ctx context.Context, msgs []quan.Outgoing) []quan.SendResult {
	rs := s.Sender.Send(ctx, msgs)
	s.stop()
	return rs
}

// TestDispatchStopRecords: a dispatcher told to stop (its context ends)
// after the gateway accepted a batch still records it sent: nothing is
// sent again after the lease.
func TestDispatchStopRecords(t *testing.T) {
	st := testrig.Store(t)
	clock := testrig.NewClock(noonCST(2))
	gw := startGateway(t, nil)
	recordAll(t, st, clock.Now(), smsTo(1, "+8613800000001"), smsTo(2, "+8613800000002"))
	ctx, stop := context.WithCancel(t.Context())
	d := &notify.Dispatcher{Store: st, Contacts: st, Senders: map[quan.NotifyType]quan.Sender{quan.NotifySMS: stopping{gw.sender(t), stop}},
		Owner: "a", Now: clock.At()}
	if n, err := d.DispatchOnce(ctx, quan.NotifySMS); err != nil || n != 2 {
		t.Fatalf("DispatchOnce = %d, %v; want 2 recorded", n, err)
	}
	for _, u := range []int64{1, 2} {
		if got := status(t, st, u, quan.NotifySMS); got.Status != quan.NotificationSent {
			t.Errorf("user %d after the stop: %+v, want sent", u, got)
		}
	}
}

// smtpServer is a real SMTP server (emersion/go-smtp): temp@ gets 451 at
// RCPT, perm@ 550; others are kept.
type smtpServer struct {
	addr string
	mu   sync.Mutex
	to   []string
	ids  []string
}

func startSMTP(t *testing.T) *smtpServer {
	srv := &smtpServer{}
	s := smtp.NewServer(srv)
	s.Domain, s.AllowInsecureAuth = "localhost", true
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.addr = l.Addr().String()
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	return srv
}

func (srv *smtpServer) NewSession(*smtp.Conn) (smtp.Session, error) {
	return &smtpSession{srv: srv}, nil
}

type smtpSession struct {
	srv *smtpServer
	to  []string
}

func (s *smtpSession) Mail(string, *smtp.MailOptions) error { return nil }
func (s *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	switch {
	case strings.HasPrefix(to, "temp@"):
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Mailbox busy"}
	case strings.HasPrefix(to, "perm@"):
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "No such user"}
	}
	s.to = append(s.to, to)
	return nil
}
func (s *smtpSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	id := ""
	for _, line := range strings.Split(string(b), "\r\n") {
		if v, ok := strings.CutPrefix(line, "Message-ID: "); ok {
			id = v
		}
	}
	s.srv.mu.Lock()
	s.srv.to = append(s.srv.to, s.to...)
	s.srv.ids = append(s.srv.ids, id)
	s.srv.mu.Unlock()
	return nil
}
func (s *smtpSession) Reset()        { s.to = nil }
func (s *smtpSession) Logout() error { return nil }

func TestDispatchEmail(t *testing.T) {
	st := testrig.Store(t)
	clock := testrig.NewClock(noonCST(2))
	srv := startSMTP(t)
	unsub, err := mail.UnsubscribeLink("https://quan.example.com/unsubscribe", func(m quan.Outgoing) string { return m.ID })
	if err != nil {
		t.Fatal(err)
	}
	sender, err := mail.New(mail.Config{URL: "smtp://" + srv.addr + "?from=noreply@example.com&tls=none", Unsubscribe: unsub})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sender.Close() })
	to := func(user int64, addr string) *quan.Notification {
		n := smsTo(user, addr)
		n.Channel = quan.NotifyEmail
		return n
	}
	recordAll(t, st, clock.Now(), to(1, "ok@example.com"), to(2, "temp@example.com"), to(3, "perm@example.com"))
	d := &notify.Dispatcher{Store: st, Contacts: st, Senders: map[quan.NotifyType]quan.Sender{quan.NotifyEmail: sender},
		Owner: "d", MaxAttempts: 2, Backoff: []time.Duration{time.Minute}, Now: clock.At()}
	dispatchOnce(t, d, quan.NotifyEmail)
	if got := status(t, st, 1, quan.NotifyEmail); got.Status != quan.NotificationSent {
		t.Errorf("ok@: %+v, want sent", got)
	}
	if got := status(t, st, 2, quan.NotifyEmail); got.Status != quan.NotificationDeferred || !got.NextAt.Equal(clock.Now().Add(time.Minute)) {
		t.Errorf("temp@: %+v, want deferred a minute", got)
	}
	if got := status(t, st, 3, quan.NotifyEmail); got.Status != quan.NotificationFailed || !strings.Contains(got.Reason, "550") {
		t.Errorf("perm@: %+v, want failed with the 550", got)
	}
	clock.Add(time.Minute)
	dispatchOnce(t, d, quan.NotifyEmail)
	if got := status(t, st, 2, quan.NotifyEmail); got.Status != quan.NotificationFailed || !strings.HasPrefix(got.Reason, quan.ReasonTooManyTries) || got.Attempts != 2 {
		t.Errorf("temp@ after its last try: %+v, want failed max_attempts", got)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if !slices.Equal(srv.to, []string{"ok@example.com"}) || len(srv.ids) != 1 || !strings.Contains(srv.ids[0], "task.1_1_email") {
		t.Errorf("the server got mail to %v with ids %v", srv.to, srv.ids)
	}
}
