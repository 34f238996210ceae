package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/quanhq/quan"
)

// Relay defaults.
const (
	DefaultLease = time.Minute
	DefaultBatch = 1000
	DefaultPoll  = 500 * time.Millisecond
)

// Relay passes the outbox's events on.
//
// Every process may run one: each takes batches of events with a lease
// (quan.EventStore.TakeEvents), so processes share the work, and a batch
// whose process died before it marked it relayed is taken again by
// another once the lease runs out. So every event is relayed at least
// once; one taken again after a crash may be published a second time,
// which the bus drops when its message id comes again within its
// duplicate window (NATS JetStream: 2 minutes by default) and consumers
// drop by the event's id. At most one batch (Batch events) is published
// twice per crash.
//
// On the bus, coupon events go on quan.CouponEventSubject as arrays of
// quan.CouponEvent, up to quan.MaxEventsPerMessage a message, with the
// message id "events-<first seq>-<last seq>"; other events each on
// quan.EventSubject(type), its message id the event's id.
type Relay struct {
	Store quan.EventStore
	// Bus publishes the events; required.
	Bus quan.Bus

	Owner string        // names this relay among processes; required
	Lease time.Duration // default DefaultLease; longer than a batch takes
	Batch int           // events a take; default DefaultBatch
	Poll  time.Duration // wait when nothing was due; default DefaultPoll
	Now   quan.Clock
	// Logger logs failures; nil discards.
	Logger *slog.Logger

	Counters Counters
}

// Counters count what a Relay did, for metrics.
type Counters struct {
	Relayed  atomic.Int64 // events marked relayed
	Messages atomic.Int64 // messages published
	Retaken  atomic.Int64 // events taken again after a relay lost them
	Failures atomic.Int64 // batches that failed and wait for their lease
}

func (r *Relay) logger() *slog.Logger {
	if r.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Logger
}

func (r *Relay) lease() time.Duration { return cmpOr(r.Lease, DefaultLease) }
func (r *Relay) batch() int           { return cmpOr(r.Batch, DefaultBatch) }
func (r *Relay) poll() time.Duration  { return cmpOr(r.Poll, DefaultPoll) }

func cmpOr[T int | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// Run relays events until ctx ends, then returns nil. A batch that fails
// is logged and left to its lease.
func (r *Relay) Run(ctx context.Context) error {
	if r.Owner == "" || r.Bus == nil {
		return errors.New("event relay: no owner or no bus")
	}
	for {
		n, err := r.RelayOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			r.Counters.Failures.Add(1)
			r.logger().Warn("relay events", "err", err)
		}
		if err == nil && n >= r.batch() {
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(r.poll()):
		}
	}
}

// RelayOnce takes one batch of due events, publishes it and marks it
// relayed; it returns how many events it took. A batch that fails to
// publish stays held until its lease runs out, then is taken again.
func (r *Relay) RelayOnce(ctx context.Context) (int, error) {
	now := r.Now.UTC()
	es, err := r.Store.TakeEvents(ctx, r.Owner, now, now.Add(r.lease()), r.batch())
	if err != nil || len(es) == 0 {
		return 0, err
	}
	for _, e := range es {
		if e.Attempts > 1 {
			r.Counters.Retaken.Add(1)
		}
	}
	ms, err := Messages(es)
	if err != nil {
		return len(es), err
	}
	if err := r.Bus.PublishMany(ctx, ms); err != nil {
		return len(es), fmt.Errorf("publish %d events: %w", len(es), err)
	}
	r.Counters.Messages.Add(int64(len(ms)))
	seqs := make([]int64, len(es))
	for i, e := range es {
		seqs[i] = e.Seq
	}
	n, err := r.Store.FinishEvents(ctx, r.Owner, r.Now.UTC(), seqs)
	if err != nil {
		return len(es), fmt.Errorf("mark %d events relayed: %w", len(es), err)
	}
	r.Counters.Relayed.Add(int64(n))
	return len(es), nil
}

// Sweep deletes the events relayed more than retention ago, in batches,
// and returns how many.
func (r *Relay) Sweep(ctx context.Context, retention time.Duration, batch int) (int, error) {
	if retention <= 0 {
		return 0, nil
	}
	before := r.Now.UTC().Add(-retention)
	n := 0
	for {
		k, err := r.Store.DeleteEvents(ctx, before, batch)
		n += k
		if err != nil || k < batch {
			return n, err
		}
	}
}

// Messages makes the bus messages of es, in order: coupon events in
// arrays on quan.CouponEventSubject, the rest one a message.
func Messages(es []*quan.Event) ([]quan.Message, error) {
	var (
		ms   []quan.Message
		run  []quan.CouponEvent
		from int64
	)
	flush := func() error {
		if len(run) == 0 {
			return nil
		}
		data, err := json.Marshal(run)
		if err != nil {
			return fmt.Errorf("encode %d coupon events: %w", len(run), err)
		}
		ms = append(ms, quan.Message{Subject: quan.CouponEventSubject, Data: data,
			ID: fmt.Sprintf("events-%d-%d", from, run[len(run)-1].Seq)})
		run = run[:0]
		return nil
	}
	for _, e := range es {
		if !e.Type.Coupon() {
			if err := flush(); err != nil {
				return nil, err
			}
			data, err := json.Marshal(e)
			if err != nil {
				return nil, fmt.Errorf("encode event %s: %w", e.ID(), err)
			}
			ms = append(ms, quan.Message{Subject: quan.EventSubject(e.Type), ID: e.ID(), Data: data})
			continue
		}
		ce, err := e.CouponEvent()
		if err != nil {
			return nil, err
		}
		if len(run) == 0 {
			from = e.Seq
		}
		run = append(run, ce)
		if len(run) == quan.MaxEventsPerMessage {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return slices.Clip(ms), nil
}

// RelayStats returns the counters, for metrics (prom.Events).
func (r *Relay) RelayStats() (relayed, messages, retaken, failures int64) {
	c := &r.Counters
	return c.Relayed.Load(), c.Messages.Load(), c.Retaken.Load(), c.Failures.Load()
}
