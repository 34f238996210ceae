package claims

import (
	"context"
	"errors"
	"testing"
	"time"
)

// fakeClock is a pace's clock: sleeping moves it on.
type fakeClock struct {
	t     time.Time
	slept []time.Duration
}

func (c *fakeClock) now() time.Time { return c.t }

func (c *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.slept = append(c.slept, d)
	c.t = c.t.Add(d)
	return nil
}

func newFakePace(rate float64) (*pace, *fakeClock) {
	c := &fakeClock{t: time.Date(2030, 3, 14, 9, 0, 0, 0, time.UTC)}
	p := newPace(rate)
	p.now, p.sleep = c.now, c.sleep
	return p, c
}

// TestPace: while claims arrive, batches go n/rate apart; a second after
// the last claim, the backlog goes at once.
func TestPace(t *testing.T) {
	p, c := newFakePace(1000)
	wait := func(n int, want time.Duration) {
		t.Helper()
		got, err := p.wait(t.Context(), n)
		if err != nil || got != want {
			t.Fatalf("wait(%d) at +%s: %s, %v; want %s", n, c.t.Sub(time.Date(2030, 3, 14, 9, 0, 0, 0, time.UTC)), got, err, want)
		}
	}
	// Quiet from the start: no claim accepted yet.
	wait(500, 0)
	wait(500, 0)

	p.accepted()
	wait(500, 0)                    // the first batch of the sale goes at once
	wait(500, 500*time.Millisecond) // the next 500 claims after 0.5 s
	wait(200, 500*time.Millisecond)
	p.accepted() // claims still arrive
	c.t = c.t.Add(100 * time.Millisecond)
	wait(100, 100*time.Millisecond) // 200 claims are 0.2 s, of which 0.1 s went by
	c.t = c.t.Add(500 * time.Millisecond)
	wait(500, 0) // the batch before was due long ago
	wait(500, 500*time.Millisecond)
	// No claim for a second: full speed.
	wait(500, 0)
	wait(500, 0)
	if len(c.slept) != 4 {
		t.Errorf("slept %v, want 4 waits", c.slept)
	}
}

// TestPaceRounds: batch sizes whose time at the rate a float64 does not
// hold exactly (1,057 claims at 1,000 a second: 1.057 s) still go whole
// milliseconds apart, not a nanosecond short.
func TestPaceRounds(t *testing.T) {
	p, _ := newFakePace(1000)
	p.accepted()
	for i, tc := range []struct {
		n    int
		want time.Duration
	}{{1057, 0}, {1, 1057 * time.Millisecond}, {3, time.Millisecond}, {1, 3 * time.Millisecond}} {
		p.accepted()
		if got, err := p.wait(t.Context(), tc.n); err != nil || got != tc.want {
			t.Fatalf("batch %d of %d claims waited %s, %v; want %s", i, tc.n, got, err, tc.want)
		}
	}
}

// TestPaceOff: without a rate nothing waits, however busy.
func TestPaceOff(t *testing.T) {
	p, c := newFakePace(0)
	for range 10 {
		p.accepted()
		if d, err := p.wait(t.Context(), 500); d != 0 || err != nil {
			t.Fatalf("wait: %s, %v", d, err)
		}
	}
	if len(c.slept) != 0 {
		t.Errorf("slept %v", c.slept)
	}
}

// TestPaceCanceled: a wait ends with its context, naming what it did.
func TestPaceCanceled(t *testing.T) {
	p := newPace(1000)
	p.accepted()
	if _, err := p.wait(t.Context(), 500); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := p.wait(ctx, 500)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("wait on a canceled context: %v", err)
	}
}
