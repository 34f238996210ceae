package nats

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quanhq/quan"
)

// outage returns err as quan.Unavailable(quan.BackendBus, err) when it
// says the bus cannot serve now rather than that the message is wrong:
// no server reachable, the connection lost, closed or reconnecting, no
// acknowledgement in time, JetStream without a leader or a stream that
// does not answer (a server restarting, a cluster electing). Any other
// error is returned as it is, and so is one that has a quan code already
// or that the caller canceled.
func outage(err error) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return err
	}
	var qe *quan.Error
	if errors.As(err, &qe) {
		return err
	}
	if transient(err) {
		return quan.Unavailable(quan.BackendBus, err)
	}
	return err
}

// unavailable is outage for the error a method returns, deferred at its
// top: `defer b.unavailable(&err)`. Every exported method of the bus that
// returns an error does so (TestEveryMethodTranslatesOutages).
func (b *Bus) unavailable(errp *error) { *errp = outage(*errp) }

// transient reports whether err is one of the client's or JetStream's
// that says the bus cannot serve now (see outage).
func transient(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		// 503: JetStream not ready, no quorum, a stream or consumer
		// without a leader; 408: a request timed out on the server.
		return apiErr.Code == 503 || apiErr.Code == 408
	}
	var ne net.Error
	return errors.As(err, &ne) ||
		errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrConnectionDraining) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, nats.ErrNoServers) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, nats.ErrStaleConnection) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) ||
		errors.Is(err, jetstream.ErrAsyncPublishTimeout) || errors.Is(err, jetstream.ErrServerShutdown) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
