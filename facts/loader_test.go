package facts_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/facts"
	"github.com/quanhq/quan/internal/testrig"
)

// slowFacts is a real store whose reads of facts take a while, as a busy
// store's do, and counts them and the users they ask for.
type slowFacts struct {
	*countingFacts
	mu    sync.Mutex
	asked int
}

func (s *slowFacts) UserFacts(ctx context.Context, users []int64) (map[int64]*quan.UserFacts, error) {
	time.Sleep(2 * time.Millisecond)
	s.mu.Lock()
	s.asked += len(users)
	s.mu.Unlock()
	return s.countingFacts.UserFacts(ctx, users)
}

// TestFactsMissesShareReads: 400 users' first claims at once miss the
// cache together; their facts come in far fewer store reads than users,
// each user's right, and each user asked for once.
func TestFactsMissesShareReads(t *testing.T) {
	ctx := t.Context()
	clock := testrig.NewClock(factsT0)
	base, counting := newAttributes(t, clock)
	st := &slowFacts{countingFacts: counting}
	for u := int64(1); u <= 400; u += 2 { // the odd users are on file
		if _, err := base.Put(ctx, testrig.Admin, quan.UserFacts{UserID: u, Level: u % 5, Tags: []string{"t"}}); err != nil {
			t.Fatal(err)
		}
	}
	counting.reads.Store(0)
	s := &facts.Service{Store: st, Now: clock.At()}
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, 400)
	for u := int64(1); u <= 400; u++ {
		wg.Go(func() {
			<-start
			f, err := s.Facts(ctx, u)
			switch {
			case err != nil:
				errs <- err
			case f.UserID != u:
				t.Errorf("Facts(%d) = facts of %d", u, f.UserID)
			case u%2 == 1 && (f.Level != u%5 || len(f.Tags) != 1):
				t.Errorf("Facts(%d) = %+v", u, f)
			case u%2 == 0 && (f.Level != 0 || f.Tags == nil || len(f.Tags) != 0):
				t.Errorf("Facts(%d), nothing on file = %+v", u, f)
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	reads := counting.reads.Load()
	if reads >= 100 {
		t.Errorf("400 concurrent misses took %d store reads; they should share them", reads)
	}
	if st.asked != 400 {
		t.Errorf("the reads asked for %d users, want each of the 400 once", st.asked)
	}
	t.Logf("400 misses, %d store reads", reads)
	// Now cached: no read at all.
	for u := int64(1); u <= 400; u++ {
		if _, err := s.Facts(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if n := counting.reads.Load(); n != reads {
		t.Errorf("cached facts read the store again (%d reads)", n-reads)
	}
}

// TestFactsLoadCanceled: a caller whose context ends while its read is in
// flight gets its answer or its error, and the other callers theirs.
func TestFactsLoadCanceled(t *testing.T) {
	clock := testrig.NewClock(factsT0)
	base, counting := newAttributes(t, clock)
	s := &facts.Service{Store: &slowFacts{countingFacts: counting}, Now: clock.At()}
	_ = base
	var wg sync.WaitGroup
	for u := int64(1); u <= 50; u++ {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(t.Context())
			if u%3 == 0 {
				cancel()
			}
			defer cancel()
			f, err := s.Facts(ctx, u)
			if err == nil && f.UserID != u {
				t.Errorf("Facts(%d) = facts of %d", u, f.UserID)
			}
		})
	}
	wg.Wait()
	for u := int64(1); u <= 50; u++ {
		if f, err := s.Facts(t.Context(), u); err != nil || f.UserID != u {
			t.Fatalf("Facts(%d) after = %+v, %v", u, f, err)
		}
	}
}
