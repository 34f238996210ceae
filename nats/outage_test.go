package nats

import (
	"context"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// TestBusUnavailable: with its server gone, a publish whose context ends
// before the server is back fails unavailable, naming the bus, as do
// PublishMany, Backlog and Ping; and so does every call on a closed bus.
func TestBusUnavailable(t *testing.T) {
	assert := func(t *testing.T, what string, err error) {
		t.Helper()
		if quan.ErrorCode(err) != quan.EUNAVAILABLE || quan.ErrorBackend(err) != quan.BackendBus {
			t.Errorf("%s: %v (code %q, backend %q), want %s of the %s", what, err,
				quan.ErrorCode(err), quan.ErrorBackend(err), quan.EUNAVAILABLE, quan.BackendBus)
		}
	}
	calls := func(t *testing.T, b *Bus) {
		t.Helper()
		m := quan.Message{Subject: quan.ClaimBatchSubject, ID: "down", Data: []byte("x")}
		// A claim's hand-off has a deadline of its own: this one's.
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		assert(t, "Publish", b.Publish(ctx, m))
		ctx, cancel = context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		assert(t, "PublishMany", b.PublishMany(ctx, []quan.Message{m}))
		ctx, cancel = context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		_, err := b.Backlog(ctx, quan.ClaimBatchSubject, "claims")
		assert(t, "Backlog", err)
		assert(t, "Ping", b.Ping(t.Context()))
	}
	t.Run("ServerDown", func(t *testing.T) {
		srv, err := startServer(t.Context(), t.TempDir(), nil, -1)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Open(t.Context(), srv.clientURL(), nil)
		if err != nil {
			srv.Close()
			t.Fatal(err)
		}
		defer b.Close()
		srv.Close()
		calls(t, b)
	})
	t.Run("Closed", func(t *testing.T) {
		srv := startTestServer(t, t.TempDir())
		b, err := srv.Bus(t.Context(), Config{})
		if err != nil {
			t.Fatal(err)
		}
		b.Close()
		calls(t, b)
	})
}
