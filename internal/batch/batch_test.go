package batch

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"testing"
)

// TestBatcherDoMany: the items of one call come back in order, split over
// batches when they exceed one, and an error of any batch is the call's.
func TestBatcherDoMany(t *testing.T) {
	var sizes []int
	fail := false
	b := New(4, func(_ context.Context, ins []int) ([]int, error) {
		sizes = append(sizes, len(ins))
		if fail && len(sizes) == 2 {
			return nil, errors.New("second batch failed")
		}
		outs := make([]int, len(ins))
		for i, in := range ins {
			outs[i] = 10 * in
		}
		return outs, nil
	})
	outs, err := b.DoMany(t.Context(), []int{1, 2, 3, 4, 5, 6})
	if err != nil || !slices.Equal(outs, []int{10, 20, 30, 40, 50, 60}) || !slices.Equal(sizes, []int{4, 2}) {
		t.Fatalf("DoMany gave %v, %v in batches %v; want the items times ten in batches of 4 and 2", outs, err, sizes)
	}
	sizes, fail = nil, true
	if outs, err := b.DoMany(t.Context(), []int{1, 2, 3, 4, 5}); err == nil || outs != nil {
		t.Fatalf("DoMany with a failed batch gave %v, %v; want its error", outs, err)
	}
	if outs, err := b.DoMany(t.Context(), nil); err != nil || len(outs) != 0 {
		t.Fatalf("DoMany of nothing gave %v, %v", outs, err)
	}
}

// TestBatcherDo: the items that arrive while a batch runs go together in
// the next; a caller whose context ends gets its error, and its item
// still goes.
func TestBatcherDo(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	var sizes []int
	var seen []int
	b := New(100, func(_ context.Context, ins []int) ([]int, error) {
		sizes = append(sizes, len(ins))
		seen = append(seen, ins...)
		if len(sizes) == 1 {
			close(started)
			<-release
		}
		return ins, nil
	})
	first := make(chan int)
	go func() {
		n, _ := b.Do(context.Background(), 0)
		first <- n
	}()
	<-started // the first batch runs, with item 0 alone
	results := make(chan int, 10)
	for i := 1; i <= 10; i++ {
		go func() {
			n, err := b.Do(context.Background(), i)
			if err != nil {
				t.Error(err)
			}
			results <- n
		}()
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Do(ctx, 11); !errors.Is(err, context.Canceled) {
		t.Errorf("Do with a cancelled context: %v, want context.Canceled", err)
	}
	for len(queued(b)) < 11 {
		runtime.Gosched()
	}
	close(release)
	if n := <-first; n != 0 {
		t.Errorf("first item gave %d", n)
	}
	got := 0
	for range 10 {
		got += <-results
	}
	if got != 55 {
		t.Errorf("the ten callers got %d in all, want 55", got)
	}
	if !slices.Equal(sizes, []int{1, 11}) || len(seen) != 12 {
		t.Errorf("batches of %v carrying %v; want 1, then the 11 that queued meanwhile (the cancelled caller's too)", sizes, seen)
	}
}

// queued returns a copy of b's queue.
func queued[In, Out any](b *Batcher[In, Out]) []item[In, Out] {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.queue)
}
