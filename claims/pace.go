package claims

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// MinPersistRate is the lowest Service.PersistRate other than 0. A
// process holds up to batchConcurrency+batchPrefetch claim messages of
// MaxClaimsPerMessage claims from the bus (10,000 claims): at this rate
// the last of them waits 10 s, a third of their AckWait (30 s); much
// slower, they would outwait it and be delivered again, or dead-lettered.
const MinPersistRate = 1000

// persistQuiet is how long after the last claim it accepted a process
// counts as quiet: its backlog of claims is then persisted at full speed.
const persistQuiet = time.Second

// pace holds back the store writes of claims while claims arrive: at most
// rate claims a second go to the store while this process accepts claims,
// and none are held once it has accepted none for persistQuiet. A flash
// sale's peak is shaved: the claims wait on the bus, which took them
// durably before they were answered, and the cores and the store serve the
// sale first; the backlog is written once it is over, in full batches.
type pace struct {
	rate float64 // claims a second; 0 holds nothing back
	last atomic.Int64
	// now and sleep are the clock; tests set them.
	now   func() time.Time
	sleep func(context.Context, time.Duration) error

	mu   sync.Mutex
	next time.Time // when the next batch may go while claims arrive
}

func newPace(rate float64) *pace {
	return &pace{rate: rate, now: time.Now, sleep: sleepCtx}
}

// accepted notes that a claim was accepted now. Under load many claims a
// millisecond arrive; only one of them writes.
func (p *pace) accepted() {
	if p.rate <= 0 {
		return
	}
	n := p.now().UnixNano()
	if n-p.last.Load() >= int64(time.Millisecond) {
		p.last.Store(n)
	}
}

// wait returns when a batch of n claims may go to the store: at once when
// the process is quiet, else n/rate seconds after the batch before it
// was allowed. It returns the time it waited, or ctx's error.
func (p *pace) wait(ctx context.Context, n int) (time.Duration, error) {
	if p.rate <= 0 {
		return 0, nil
	}
	now := p.now()
	p.mu.Lock()
	if now.Sub(time.Unix(0, p.last.Load())) >= persistQuiet {
		p.next = now
		p.mu.Unlock()
		return 0, nil
	}
	start := p.next
	if start.Before(now) {
		start = now
	}
	// Rounded: n/rate in seconds is seldom exact in a float64 (1,057
	// claims at 1,000 a second came to 1.056999999 s).
	p.next = start.Add(time.Duration(math.Round(float64(n) * float64(time.Second) / p.rate)))
	p.mu.Unlock()
	d := start.Sub(now)
	if d <= 0 {
		return 0, nil
	}
	if err := p.sleep(ctx, d); err != nil {
		return 0, fmt.Errorf("pace claims to the store: %w", err)
	}
	return d, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
