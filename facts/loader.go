package facts

import (
	"context"
	"sync"
	"time"

	"github.com/quanhq/quan"
)

// factsBatch bounds the users one store read of factsLoader asks for.
const factsBatch = 500

// factsReadTimeout bounds a store read of factsLoader, which serves the
// callers that joined it whatever their own contexts.
const factsReadTimeout = 5 * time.Second

// factsLoader reads the facts the cache misses, many users a store read:
// while a read is in flight, the misses that come queue, and the next
// read takes them all (up to factsBatch). Under a flash sale, when every
// claim is some user's first, that is one query for hundreds of users
// instead of one each; a lone miss is read at once, with no waiting for
// company. No goroutine of its own: the first caller to find no read in
// flight leads, and hands the lead to a waiter when it is done.
type factsLoader struct {
	read func(ctx context.Context, users []int64) (map[int64]*quan.UserFacts, error)

	mu      sync.Mutex
	leading bool
	queue   []*factsWaiter
}

type factsWaiter struct {
	user int64
	done chan struct{} // closed when f/err are set or the waiter is to lead
	lead bool
	f    *quan.UserFacts
	err  error
}

// load returns the facts of user, read with the other misses queued.
func (l *factsLoader) load(ctx context.Context, user int64) (*quan.UserFacts, error) {
	w := &factsWaiter{user: user, done: make(chan struct{})}
	l.mu.Lock()
	l.queue = append(l.queue, w)
	if l.leading {
		l.mu.Unlock()
		select {
		case <-w.done:
		case <-ctx.Done():
			// The read it joined still answers it; nobody listens. Should
			// the lead have been handed to it meanwhile, it leads anyway.
			<-w.done
		}
		if !w.lead {
			return w.f, w.err
		}
	} else {
		l.leading = true
		l.mu.Unlock()
	}
	l.lead()
	return w.f, w.err
}

// lead runs one read of the queue's head, answers its waiters, and hands
// the lead to the next queued waiter, if any.
func (l *factsLoader) lead() {
	l.mu.Lock()
	n := min(len(l.queue), factsBatch)
	batch := l.queue[:n:n]
	l.queue = l.queue[n:]
	l.mu.Unlock()

	users := make([]int64, 0, len(batch))
	seen := make(map[int64]bool, len(batch))
	for _, w := range batch {
		if !seen[w.user] {
			seen[w.user] = true
			users = append(users, w.user)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), factsReadTimeout)
	m, err := l.read(ctx, users)
	cancel()
	for _, w := range batch {
		w.f, w.err = m[w.user], err
		if err == nil && w.f == nil {
			w.f = &quan.UserFacts{UserID: w.user, Tags: []string{}}
		}
	}

	l.mu.Lock()
	var next *factsWaiter
	if len(l.queue) > 0 {
		next = l.queue[0]
		next.lead = true
	} else {
		l.leading = false
	}
	l.mu.Unlock()
	for _, w := range batch {
		if !w.lead { // the leader itself is not waiting
			close(w.done)
		}
	}
	if next != nil {
		close(next.done)
	}
}
