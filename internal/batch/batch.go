// Package batch gathers the items of concurrent callers into batches: a
// bus message, a store transaction or a cache script call costs about the
// same whether it carries one item or hundreds, so under load the cost is
// shared.
package batch

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Timeout bounds one run of a batch's function. A batch runs on a
// context of its own, not on any caller's: the items of callers that gave
// up still go with the others.
const Timeout = 30 * time.Second

// Batcher runs the items of concurrent callers through fn together: while
// one batch runs, the items that arrive queue up and go as the next
// batch, up to max, so batches grow with the load and a lone item goes at
// once. No goroutine outlives the queue: the caller that finds it idle
// starts one that drains it.
type Batcher[In, Out any] struct {
	max     int
	fn      func(context.Context, []In) ([]Out, error)
	mu      sync.Mutex
	queue   []item[In, Out]
	running bool
}

type item[In, Out any] struct {
	in   In
	i    int // where the result goes among the caller's
	done chan result[Out]
}

type result[Out any] struct {
	i   int
	out Out
	err error
}

// New returns a Batcher running batches of at most max items through fn,
// which must return one Out per In, in order, or an error for them all.
func New[In, Out any](max int, fn func(ctx context.Context, ins []In) ([]Out, error)) *Batcher[In, Out] {
	return &Batcher[In, Out]{max: max, fn: fn}
}

// Do runs in in the next batch and returns its Out, or the batch's
// error. If ctx ends first it returns ctx's error; in still goes. A batch
// ends within Timeout, so Do returns then at the latest.
func (b *Batcher[In, Out]) Do(ctx context.Context, in In) (Out, error) {
	it := item[In, Out]{in: in, done: make(chan result[Out], 1)}
	b.mu.Lock()
	b.queue = append(b.queue, it)
	start := !b.running
	b.running = true
	b.mu.Unlock()
	if start {
		go b.drain()
	}
	done := ctx.Done()
	if done == nil { // a context that never ends: a receive costs less than a select
		r := <-it.done
		return r.out, r.err
	}
	select {
	case r := <-it.done:
		return r.out, r.err
	case <-done:
		var zero Out
		return zero, ctx.Err()
	}
}

// DoMany runs ins through the batcher and returns their outs in order, or
// the first error of the batches they went in. They queue together, so
// they share a batch unless it fills up: then the rest go in the next.
func (b *Batcher[In, Out]) DoMany(ctx context.Context, ins []In) ([]Out, error) {
	done := make(chan result[Out], len(ins))
	b.mu.Lock()
	for i, in := range ins {
		b.queue = append(b.queue, item[In, Out]{in: in, i: i, done: done})
	}
	start := !b.running && len(ins) > 0
	b.running = b.running || start
	b.mu.Unlock()
	if start {
		go b.drain()
	}
	outs := make([]Out, len(ins))
	var err error
	for range ins {
		select {
		case r := <-done:
			outs[r.i] = r.out
			if err == nil {
				err = r.err
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err != nil {
		return nil, err
	}
	return outs, nil
}

// drain runs batches until the queue is empty.
func (b *Batcher[In, Out]) drain() {
	for {
		b.mu.Lock()
		n := min(len(b.queue), b.max)
		if n == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		items := b.queue[:n:n]
		b.queue = b.queue[n:]
		b.mu.Unlock()

		ins := make([]In, n)
		for i, it := range items {
			ins[i] = it.in
		}
		ctx, cancel := context.WithTimeout(context.Background(), Timeout)
		outs, err := b.fn(ctx, ins)
		cancel()
		if err == nil && len(outs) != n {
			err = fmt.Errorf("batch of %d gave %d results", n, len(outs))
		}
		for i, it := range items {
			if err != nil {
				it.done <- result[Out]{i: it.i, err: err}
			} else {
				it.done <- result[Out]{i: it.i, out: outs[i]}
			}
		}
	}
}
