package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/quanhq/quan"
)

// Dispatcher defaults.
const (
	DefaultDispatchLease = 2 * time.Minute
	DefaultDispatchBatch = 500
	DefaultDispatchPoll  = time.Second
	// DefaultDispatchConcurrency is the batches of a channel a process
	// has in flight at once.
	DefaultDispatchConcurrency = 1
	DefaultMaxAttempts         = 5
)

// DefaultNotifyBackoff is how long a message the provider asked to retry waits
// after its first, second, third and later tries.
var DefaultNotifyBackoff = []time.Duration{30 * time.Second, 2 * time.Minute, 10 * time.Minute, time.Hour}

// Dispatcher sends the email and SMS notifications the store holds.
//
// Every process may run one: each takes due messages in batches with a
// lease (NotificationStore.TakeNotifications), so processes share the
// work, and a batch whose process died before recording it is taken again
// once the lease runs out and sent with the same message ids. The store's
// status is the truth; there is nothing to lose on a crash but the time of
// a lease.
//
// The work is not carried on the bus, nor is a wake-up: the store's
// lease already shares batches across processes and survives kill -9
// (cmd/quan TestNotifyKill), and the Bus port delivers each message to
// one consumer of a durable, so a "quan.notify.due" wake-up would reach
// one dispatcher, not all, and leave a durable per process behind. What
// a wake-up would save is at most Poll (1 s) of latency when messages
// are recorded into an idle outbox; a busy dispatcher takes full batches
// back to back without polling.
//
// For each message, at send time: quiet hours defer it to their end
// without counting a try; a user who opted out of the channel gets it
// failed with ReasonOptedOut (it is never sent later); otherwise it is
// rendered in its language and handed to the channel's Sender, at most
// Rates[channel] a second in this process. Sent is final; RetryLater
// defers it by Backoff (or the provider's Retry-After if longer) until
// MaxAttempts tries, then fails it with the last reason; FailedForGood
// fails it.
type Dispatcher struct {
	Store    quan.NotificationStore
	Contacts quan.ContactStore
	// Senders sends each outside channel (NotifyEmail, NotifySMS); a
	// channel without one is not dispatched in this process.
	Senders map[quan.NotifyType]quan.Sender
	// Rates bounds the messages a second of each channel, per process:
	// n processes send up to n times as many. 0 or missing: no bound.
	Rates map[quan.NotifyType]float64
	Texts quan.Texts
	Quiet QuietHours // the zero value has none

	Owner string        // names this dispatcher among processes; required
	Lease time.Duration // default DefaultDispatchLease; longer than a batch takes to send
	Batch int           // messages a take; default DefaultDispatchBatch
	// Concurrency is how many batches of one channel this process has in
	// flight at once (each taken, sent and recorded on its own); default
	// 1. More hide the provider's and the store's round trips.
	Concurrency int
	Poll        time.Duration   // wait when nothing was due; default DefaultDispatchPoll
	MaxAttempts int             // default DefaultMaxAttempts
	Backoff     []time.Duration // default DefaultNotifyBackoff; the last repeats
	Now         quan.Clock      // nil is time.Now
	Logger      *slog.Logger    // nil discards

	once     sync.Once
	limiters map[quan.NotifyType]*rate.Limiter
	stats    map[quan.NotifyType]*dispatchCounters // made by init, never changed after
}

type dispatchCounters struct {
	sent, retried, failed, optedOut, quiet, dupes atomic.Int64
}

// Stats returns the dispatcher's counts of every channel.
func (d *Dispatcher) Stats() quan.DispatchStats {
	d.init()
	var sum quan.DispatchStats
	for ch := range d.stats {
		s := d.ChannelStats(ch)
		sum.Sent += s.Sent
		sum.Retried += s.Retried
		sum.Failed += s.Failed
		sum.OptedOut += s.OptedOut
		sum.Quiet += s.Quiet
		sum.PossibleDuplicates += s.PossibleDuplicates
	}
	return sum
}

// ChannelStats returns the dispatcher's counts of ch; zero for a channel
// it does not send.
func (d *Dispatcher) ChannelStats(ch quan.NotifyType) quan.DispatchStats {
	d.init()
	s := d.stats[ch]
	if s == nil {
		return quan.DispatchStats{}
	}
	return quan.DispatchStats{Sent: s.sent.Load(), Retried: s.retried.Load(), Failed: s.failed.Load(),
		OptedOut: s.optedOut.Load(), Quiet: s.quiet.Load(), PossibleDuplicates: s.dupes.Load()}
}

func (d *Dispatcher) init() {
	d.once.Do(func() {
		if d.Logger == nil {
			d.Logger = slog.New(slog.DiscardHandler)
		}
		if d.Now == nil {
			d.Now = time.Now
		}
		if d.Lease <= 0 {
			d.Lease = DefaultDispatchLease
		}
		if d.Batch <= 0 {
			d.Batch = DefaultDispatchBatch
		}
		if d.Poll <= 0 {
			d.Poll = DefaultDispatchPoll
		}
		if d.MaxAttempts <= 0 {
			d.MaxAttempts = DefaultMaxAttempts
		}
		if len(d.Backoff) == 0 {
			d.Backoff = DefaultNotifyBackoff
		}
		d.stats = map[quan.NotifyType]*dispatchCounters{quan.NotifyEmail: {}, quan.NotifySMS: {}}
		for ch := range d.Senders {
			if d.stats[ch] == nil {
				d.stats[ch] = &dispatchCounters{}
			}
		}
		d.limiters = map[quan.NotifyType]*rate.Limiter{}
		for ch, r := range d.Rates {
			if r > 0 {
				// A burst of one batch: WaitN takes a batch at once.
				d.limiters[ch] = rate.NewLimiter(rate.Limit(r), d.Batch)
			}
		}
	})
}

// Run dispatches every channel with a Sender until ctx ends, then returns
// nil. A failing take or record is logged and tried again after Poll.
func (d *Dispatcher) Run(ctx context.Context) error {
	d.init()
	if d.Owner == "" {
		return errors.New("dispatcher: no owner name")
	}
	var wg sync.WaitGroup
	for ch := range d.Senders {
		for range max(1, d.Concurrency) {
			wg.Go(func() { d.loop(ctx, ch) })
		}
	}
	wg.Wait()
	return nil
}

// loop dispatches batches of ch until ctx ends, waiting Poll when none
// was full.
func (d *Dispatcher) loop(ctx context.Context, ch quan.NotifyType) {
	for {
		n, err := d.DispatchOnce(ctx, ch)
		if err != nil && ctx.Err() == nil {
			d.Logger.Warn("dispatch notifications", "channel", ch, "err", err)
		}
		if n >= d.Batch && err == nil {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(d.Poll):
		}
	}
}

// DispatchOnce takes one batch of ch's due messages, sends it and records
// the results, and returns how many it took. If ctx ends while the batch
// is sent, what the provider answered is still recorded (within
// finishTimeout), the rest deferred as RetryLater; a batch whose process
// dies before the record is taken again after the lease.
func (d *Dispatcher) DispatchOnce(ctx context.Context, ch quan.NotifyType) (int, error) {
	d.init()
	sender := d.Senders[ch]
	if sender == nil {
		return 0, fmt.Errorf("dispatch %s: no sender", ch)
	}
	stats := d.stats[ch]
	now := d.Now()
	ns, err := d.Store.TakeNotifications(ctx, ch, d.Owner, now, now.Add(d.Lease), d.Batch)
	if err != nil || len(ns) == 0 {
		return 0, err
	}
	results := make([]quan.NotificationResult, len(ns))
	if end, quiet := d.Quiet.Until(now); quiet {
		for i, n := range ns {
			results[i] = quan.NotificationResult{ID: n.ID, Status: quan.NotificationDeferred, Reason: "quiet_hours", NextAt: end, GiveBack: true}
		}
		stats.quiet.Add(int64(len(ns)))
		return len(ns), d.finish(ctx, results)
	}
	users := make([]int64, len(ns))
	for i, n := range ns {
		users[i] = n.UserID
	}
	contacts, err := d.Contacts.Contacts(ctx, users)
	if err != nil {
		return len(ns), fmt.Errorf("dispatch %s: %w", ch, err)
	}
	var (
		out   []quan.Outgoing
		index []int // out[j] is ns[index[j]]
	)
	for i, n := range ns {
		if contacts[n.UserID].OptedOut(ch) {
			results[i] = quan.NotificationResult{ID: n.ID, Status: quan.NotificationFailed, Reason: quan.ReasonOptedOut}
			stats.optedOut.Add(1)
			continue
		}
		r, err := d.Texts.Render(n.Kind, ch, n.Lang, n.Vars)
		if err != nil {
			results[i] = quan.NotificationResult{ID: n.ID, Status: quan.NotificationFailed, Reason: "render: " + err.Error()}
			stats.failed.Add(1)
			continue
		}
		if n.Retaken {
			stats.dupes.Add(1)
		}
		out = append(out, quan.Outgoing{ID: n.MessageID(), UserID: n.UserID, Channel: ch, To: n.Address, Kind: n.Kind,
			Lang: n.Lang, Subject: r.Subject, Text: r.Text, Params: r.Params})
		index = append(index, i)
	}
	if len(out) > 0 {
		if l := d.limiters[ch]; l != nil {
			if err := l.WaitN(ctx, len(out)); err != nil {
				return len(ns), fmt.Errorf("dispatch %s: rate limit: %w", ch, err)
			}
		}
		sent := sender.Send(ctx, out)
		at := d.Now()
		for j, r := range sent {
			n := ns[index[j]]
			results[index[j]] = d.result(stats, n, r, at)
		}
	}
	return len(ns), d.finish(ctx, results)
}

// result is what becomes of n after the provider's answer r at now.
func (d *Dispatcher) result(stats *dispatchCounters, n *quan.Notification, r quan.SendResult, now time.Time) quan.NotificationResult {
	switch r.Outcome {
	case quan.Sent:
		stats.sent.Add(1)
		return quan.NotificationResult{ID: n.ID, Status: quan.NotificationSent}
	case quan.RetryLater:
		if n.Attempts >= d.MaxAttempts {
			stats.failed.Add(1)
			return quan.NotificationResult{ID: n.ID, Status: quan.NotificationFailed,
				Reason: fmt.Sprintf("%s after %d tries: %s", quan.ReasonTooManyTries, n.Attempts, r.Reason)}
		}
		wait := d.Backoff[min(n.Attempts, len(d.Backoff))-1]
		wait = max(wait, r.After)
		stats.retried.Add(1)
		d.Logger.Debug("notification to retry", "id", n.MessageID(), "attempt", n.Attempts, "reason", r.Reason, "wait", wait)
		return quan.NotificationResult{ID: n.ID, Status: quan.NotificationDeferred, Reason: r.Reason, NextAt: now.Add(wait)}
	}
	stats.failed.Add(1)
	reason := r.Reason
	if reason == "" {
		reason = "refused by the provider"
	}
	return quan.NotificationResult{ID: n.ID, Status: quan.NotificationFailed, Reason: reason}
}

// finishTimeout bounds the record of a batch after ctx ended.
const finishTimeout = 10 * time.Second

// finish records rs, also when ctx ended meanwhile (the process stops):
// what the provider accepted is written down rather than sent again, as
// a possible duplicate, after the lease.
func (d *Dispatcher) finish(ctx context.Context, rs []quan.NotificationResult) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	if _, err := d.Store.FinishNotifications(ctx, d.Owner, d.Now(), rs); err != nil {
		return fmt.Errorf("record sent notifications: %w", err)
	}
	return nil
}

// QuietHours is a daily window in which email and SMS wait. The zero value
// has none.
type QuietHours struct {
	Start, End time.Duration // since midnight; Start > End crosses midnight
	Location   *time.Location
}

// DefaultQuietHours is 22:00–08:00 China Standard Time.
var DefaultQuietHours = QuietHours{Start: 22 * time.Hour, End: 8 * time.Hour, Location: quan.ChinaTime}

// ParseQuietHours parses "22:00-08:00" in loc (nil: China Standard Time).
// "" and "off" are no quiet hours.
func ParseQuietHours(s string, loc *time.Location) (QuietHours, error) {
	if s == "" || s == "off" {
		return QuietHours{}, nil
	}
	if loc == nil {
		loc = quan.ChinaTime
	}
	var h1, m1, h2, m2 int
	if n, err := fmt.Sscanf(s, "%d:%d-%d:%d", &h1, &m1, &h2, &m2); err != nil || n != 4 ||
		h1 < 0 || h1 > 23 || h2 < 0 || h2 > 23 || m1 < 0 || m1 > 59 || m2 < 0 || m2 > 59 || h1*60+m1 == h2*60+m2 {
		return QuietHours{}, quan.Errorf(quan.EINVALID, "quiet hours %q: want HH:MM-HH:MM, two different times, or off", s)
	}
	return QuietHours{
		Start:    time.Duration(h1)*time.Hour + time.Duration(m1)*time.Minute,
		End:      time.Duration(h2)*time.Hour + time.Duration(m2)*time.Minute,
		Location: loc,
	}, nil
}

// Until reports whether now falls in the quiet hours, and if so when they
// end.
func (q QuietHours) Until(now time.Time) (time.Time, bool) {
	if q.Start == q.End {
		return time.Time{}, false
	}
	loc := q.Location
	if loc == nil {
		loc = quan.ChinaTime
	}
	t := now.In(loc)
	day := func(offset int, at time.Duration) time.Time {
		return time.Date(t.Year(), t.Month(), t.Day()+offset, 0, 0, 0, 0, loc).Add(at)
	}
	since := t.Sub(day(0, 0))
	switch {
	case q.Start < q.End && since >= q.Start && since < q.End:
		return day(0, q.End), true
	case q.Start > q.End && since >= q.Start:
		return day(1, q.End), true
	case q.Start > q.End && since < q.End:
		return day(0, q.End), true
	}
	return time.Time{}, false
}
