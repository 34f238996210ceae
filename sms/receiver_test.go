package sms_test

import (
	"errors"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/sms"
)

// TestReceiver: the Sender's requests reach a Receiver with the same
// secret, every message answered sent; a wrong secret is refused (the
// sender retries, nothing accepted); an Accept error has them retried.
func TestReceiver(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		got  []sms.Received
		fail bool
	)
	srv := httptest.NewServer(&sms.Receiver{Secret: secret, Accept: func(ms []sms.Received) error {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			return errors.New("the provider is down")
		}
		got = append(got, ms...)
		return nil
	}})
	defer srv.Close()
	msgs := []quan.Outgoing{outgoing("m1", "+8613800000001"), outgoing("m2", "+8613800000002")}
	for i, r := range newSender(t, srv.URL, nil).Send(t.Context(), msgs) {
		if r.Outcome != quan.Sent {
			t.Errorf("message %d: %+v", i, r)
		}
	}
	if ids := []string{got[0].ID, got[1].ID}; !slices.Equal(ids, []string{"m1", "m2"}) || got[0].Phone != "+8613800000001" || got[0].Text != msgs[0].Text || got[0].Template != "SMS_100001" {
		t.Errorf("received %+v", got)
	}
	wrong := newSender(t, srv.URL, func(c *sms.Config) { c.Secret = "another-secret-of-32-bytes-long!" })
	for _, r := range wrong.Send(t.Context(), msgs[:1]) {
		if r.Outcome != quan.RetryLater || r.After != sms.DefaultAuthRetry {
			t.Errorf("a wrong secret: %+v, want retried after %v", r, sms.DefaultAuthRetry)
		}
	}
	mu.Lock()
	fail = true
	mu.Unlock()
	for _, r := range newSender(t, srv.URL, nil).Send(t.Context(), msgs[:1]) {
		if r.Outcome != quan.RetryLater {
			t.Errorf("Accept failed: %+v, want retried", r)
		}
	}
	if len(got) != 2 {
		t.Errorf("%d messages accepted, want 2", len(got))
	}
}

// TestReceiverRemembers: with Remember, a message whose id was accepted
// before is answered sent without reaching Accept and counted in
// Duplicates, within its bound (the least recent id is forgotten first);
// a message Accept refused is no repeat when retried; and a repeat that
// comes while its first is still being accepted is to be retried, not
// taken for sent.
func TestReceiverRemembers(t *testing.T) {
	t.Parallel()
	var (
		mu      sync.Mutex
		got     []string
		dropped []string
		fail    bool
		hold    = make(chan struct{}) // closed: Accept returns
		held    = make(chan struct{}, 1)
	)
	rc := &sms.Receiver{Secret: secret, Remember: 2,
		Accept: func(ms []sms.Received) error {
			if ms[0].ID == "slow" {
				held <- struct{}{}
				<-hold
			}
			mu.Lock()
			defer mu.Unlock()
			if fail {
				return errors.New("the provider is down")
			}
			for _, m := range ms {
				got = append(got, m.ID)
			}
			return nil
		},
		Dropped: func(ms []sms.Received) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range ms {
				dropped = append(dropped, m.ID)
			}
		},
	}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	send := func(ids ...string) []quan.SendOutcome {
		t.Helper()
		msgs := make([]quan.Outgoing, len(ids))
		for i, id := range ids {
			msgs[i] = outgoing(id, "+8613800000001")
		}
		var out []quan.SendOutcome
		for _, r := range newSender(t, srv.URL, nil).Send(t.Context(), msgs) {
			out = append(out, r.Outcome)
		}
		return out
	}
	sent := func(n int) []quan.SendOutcome { return slices.Repeat([]quan.SendOutcome{quan.Sent}, n) }
	if o := send("a", "b"); !slices.Equal(o, sent(2)) {
		t.Fatalf("first batch: %v", o)
	}
	// The batch again, as after a sender killed before the answer.
	if o := send("a", "b"); !slices.Equal(o, sent(2)) {
		t.Fatalf("the batch again: %v, want sent", o)
	}
	if !slices.Equal(got, []string{"a", "b"}) || !slices.Equal(dropped, []string{"a", "b"}) || rc.Duplicates() != 2 {
		t.Fatalf("accepted %q, dropped %q (%d); want a and b once, then dropped", got, dropped, rc.Duplicates())
	}
	// c makes three ids: the least recent, a (b was seen after it), goes.
	send("c")
	send("a")
	if !slices.Equal(got, []string{"a", "b", "c", "a"}) {
		t.Fatalf("accepted %q: want a accepted again once forgotten", got)
	}
	mu.Lock()
	fail = true
	mu.Unlock()
	if o := send("d"); o[0] != quan.RetryLater {
		t.Fatalf("Accept failed: %v, want retried", o)
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	send("d")
	if got[len(got)-1] != "d" || rc.Duplicates() != 2 {
		t.Fatalf("accepted %q, %d duplicates: want d accepted on its retry, no repeat", got, rc.Duplicates())
	}

	// A repeat while its first is in Accept is retried.
	first := make(chan []quan.SendOutcome)
	go func() {
		var out []quan.SendOutcome
		for _, r := range newSender(t, srv.URL, nil).Send(t.Context(), []quan.Outgoing{outgoing("slow", "+8613800000001")}) {
			out = append(out, r.Outcome)
		}
		first <- out
	}()
	<-held
	if o := send("slow"); o[0] != quan.RetryLater {
		t.Errorf("a repeat while its first is being accepted: %v, want retried", o)
	}
	close(hold)
	if o := <-first; o[0] != quan.Sent {
		t.Errorf("the first: %v", o)
	}
}
