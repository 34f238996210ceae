package claims

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/quanhq/quan"
)

// DefaultLookupEvery is Service.LookupEvery when it is 0.
const DefaultLookupEvery = 20 * time.Millisecond

// knownIDs tells template ids that may exist from ids that cannot: ids
// are handed out in order and templates never deleted, so every id up to
// the highest exists.
//
// It never answers "cannot" from what it read before the question was
// asked: an id above the highest it knows waits for a read of the store's
// highest id that starts after it arrived. Reads start at least an
// interval (Service.LookupEvery) apart and the callers waiting for one
// share it, so a flood of made-up ids costs the store at most one read
// per interval, and each of them a wait of at most that long; a real id
// created in this process is known at once (created), and one created
// elsewhere is found by its first claim.
type knownIDs struct {
	mu      sync.Mutex
	highest int64
	last    time.Time    // when the last read of the highest id started
	next    *highestRead // the read the callers above highest wait for; nil if none is due
}

// highestRead is one read of the store's highest template id, shared by
// the callers waiting for it.
type highestRead struct {
	done    chan struct{}
	highest int64
	err     error
}

// created says template id exists: the templates service created it in
// this process.
func (k *knownIDs) created(id int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.highest = max(k.highest, id)
}

// exists reports whether template id may exist, reading the store's
// highest id (see knownIDs) when id is above the highest known.
func (k *knownIDs) exists(ctx context.Context, store quan.TemplateStore, every time.Duration, id int64) (bool, error) {
	if id <= 0 {
		return false, nil
	}
	k.mu.Lock()
	if id <= k.highest {
		k.mu.Unlock()
		return true, nil
	}
	r, lead := k.next, false
	if r == nil {
		r, lead = &highestRead{done: make(chan struct{})}, true
		k.next = r
	}
	wait := time.Until(k.last.Add(every))
	k.mu.Unlock()
	if lead {
		k.read(ctx, store, r, wait)
	} else {
		select {
		case <-r.done:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	if r.err != nil {
		return false, r.err
	}
	return id <= r.highest, nil
}

// read waits until wait is over, then reads the store's highest id for
// the callers of r. Callers who arrive once it has started wait for the
// next read: this one may not see a template created as it began. Its
// caller going away abandons neither: the others share them (the wait is
// at most LookupEvery, the read at most lookupTimeout).
func (k *knownIDs) read(ctx context.Context, store quan.TemplateStore, r *highestRead, wait time.Duration) {
	defer close(r.done)
	if wait > 0 {
		time.Sleep(wait)
	}
	k.mu.Lock()
	k.next, k.last = nil, time.Now()
	k.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
	defer cancel()
	highest, err := store.HighestTemplateID(ctx)
	k.mu.Lock()
	defer k.mu.Unlock()
	if err != nil {
		r.err = fmt.Errorf("read the highest template id: %w", err)
		return
	}
	k.highest = max(k.highest, highest)
	r.highest = k.highest
}

// lookupTimeout bounds a read of the highest template id, which the
// claims of every id above the highest wait for.
const lookupTimeout = 10 * time.Second

// TemplateCreated tells s that template id was created (by
// templates.Service in this process): its claims find it at once, with
// no look in the store.
func (s *Service) TemplateCreated(id int64) { s.known.created(id) }

// mayExist reports whether template may exist: the cache holds it (a
// template activated in any process sharing the cache), or its id is not
// above the highest (knownIDs). false means it does not exist.
func (s *Service) mayExist(ctx context.Context, template int64) (bool, error) {
	if _, err := s.Cache.State(ctx, template); err == nil {
		return true, nil
	}
	return s.known.exists(ctx, s.Templates, cmp.Or(s.LookupEvery, DefaultLookupEvery), template)
}
