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
