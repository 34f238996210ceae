package flight

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// TestDoShares: callers of one key while its call runs share that call
// and its error; another key runs on its own; a later call runs again.
func TestDoShares(t *testing.T) {
	var g Group
	var runs atomic.Int32
	release := make(chan struct{})
	started := make(chan struct{})
	errX := errors.New("x")
	var wg sync.WaitGroup
	errs := make([]error, 10)
	wg.Add(1)
	go func() {
		defer wg.Done()
		errs[0] = g.Do(1, func() error { runs.Add(1); close(started); <-release; return errX })
	}()
	<-started
	for i := 1; i < len(errs); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = g.Do(1, func() error { runs.Add(1); return nil })
		}()
	}
	if err := g.Do(2, func() error { return nil }); err != nil {
		t.Fatalf("another key: %v", err)
	}
	// The waiters are blocked on key 1's call, or have not reached Do
	// yet; either way none of them may run before the first one ends.
	if n := runs.Load(); n != 1 {
		t.Fatalf("%d calls of key 1 run at once, want 1", n)
	}
	close(release)
	wg.Wait()
	if !errors.Is(errs[0], errX) {
		t.Fatalf("first call: %v, want x", errs[0])
	}
	for i, err := range errs[1:] {
		if err != nil && !errors.Is(err, errX) {
			t.Fatalf("caller %d: %v", i+1, err)
		}
	}
	if err := g.Do(1, func() error { return nil }); err != nil {
		t.Fatalf("a call after the first ended: %v", err)
	}
}
