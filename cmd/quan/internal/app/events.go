package app

import (
	"context"
	"flag"
	"time"

	"github.com/quanhq/quan/cmd/quan/internal/cli"
	"github.com/quanhq/quan/events"
	"github.com/quanhq/quan/prom"
)

// Events configures the relay of the outbox (package events).
type Events struct {
	// Retention is how long relayed events are kept; 0 for ever. The
	// flag defaults to DefaultEventRetention.
	Retention time.Duration
	// Lease is how long a relay holds a batch: a process that dies
	// mid-batch leaves it to the others for this long. 0 is
	// events.DefaultLease.
	Lease time.Duration
}

// DefaultEventRetention is how long relayed events are kept by default.
const DefaultEventRetention = 7 * 24 * time.Hour

func (e *Events) register(fs *flag.FlagSet) {
	fs.DurationVar(&e.Retention, "event-retention", DefaultEventRetention, "how long events are kept in the outbox after they were relayed (0: for ever)")
	fs.DurationVar(&e.Lease, "event-lease", events.DefaultLease, "how long a relay holds a batch of events: a process that dies mid-batch leaves it to the others for this long, after which they publish it again (de-duplicated by id)")
}

func (e Events) validate() error {
	if e.Retention < 0 || e.Lease < 0 {
		return cli.Usagef("--event-retention and --event-lease: 0 or more")
	}
	return nil
}

// buildRelay makes the outbox's relay where there is a bus to publish on:
// a relay without one would mark events relayed that no consumer of the
// bus ever sees.
func (a *App) buildRelay() {
	b := a.Backends
	if b.ClaimBus == nil {
		return
	}
	a.Relay = &events.Relay{Store: b.Store, Bus: b.ClaimBus, Owner: runnerName(), Lease: a.Config.Events.Lease,
		Now: a.Config.Now, Logger: a.Logger}
	if a.Metrics != nil {
		a.Metrics.MustRegister(prom.Events(a.Relay, b.Store, a.Config.Now))
	}
}

// startRelay runs the relay, if any, and the outbox's retention sweep.
func (a *App) startRelay(loop func(name string, run func(context.Context) error)) {
	if a.Relay == nil {
		return
	}
	loop("event relay", a.Relay.Run)
	if a.Config.Events.Retention > 0 && a.Config.SweepEvery > 0 {
		loop("event sweeper", a.sweepEvents)
	}
}

// sweepEvents deletes the events relayed longer ago than the retention,
// every SweepEvery, in batches.
func (a *App) sweepEvents(ctx context.Context) error {
	tick := time.NewTicker(a.Config.SweepEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		n, err := a.Relay.Sweep(ctx, a.Config.Events.Retention, 10_000)
		switch {
		case err != nil && ctx.Err() == nil:
			a.Logger.Warn("delete old events", "err", err)
		case n > 0:
			a.Logger.Info("old events deleted", "events", n)
		}
	}
}
