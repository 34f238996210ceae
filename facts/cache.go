package facts

import (
	"sync"
	"time"

	"github.com/quanhq/quan"
)

// factsCache keeps users' facts in process for Service.Facts: at
// most max users, each for ttl. It is a map under a read-write lock: a hit
// takes the read lock and allocates nothing.
type factsCache struct {
	max int
	ttl time.Duration

	mu sync.RWMutex
	m  map[int64]factsEntry
	// gen counts the changes forgotten: facts read from the store before
	// a change are not kept after it (put).
	gen uint64
}

// factsEntry is one user's facts and when they go stale (Unix
// nanoseconds: a time.Time would add a pointer for the collector to scan
// in every entry).
type factsEntry struct {
	f     *quan.UserFacts
	until int64
}

func newFactsCache(max int, ttl time.Duration) *factsCache {
	return &factsCache{max: max, ttl: ttl, m: make(map[int64]factsEntry)}
}

// get returns the facts of user if they are kept and fresh at now.
func (c *factsCache) get(user int64, now time.Time) (*quan.UserFacts, bool) {
	c.mu.RLock()
	e, ok := c.m[user]
	c.mu.RUnlock()
	if !ok || now.UnixNano() >= e.until {
		return nil, false
	}
	return e.f, true
}

// generation is the count of changes so far, to pass to put.
func (c *factsCache) generation() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen
}

// put keeps f, read at now, unless a change was forgotten since gen (the
// read may predate it). When the cache is full, a sixteenth of it, chosen
// by map order (at random), makes room: no scan, no order to keep, and a
// hot user evicted is read again on its next use.
func (c *factsCache) put(f *quan.UserFacts, now time.Time, gen uint64) {
	if c.max < 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if _, ok := c.m[f.UserID]; !ok && len(c.m) >= c.max {
		n := max(c.max/16, 1)
		for u := range c.m {
			delete(c.m, u)
			if n--; n == 0 {
				break
			}
		}
	}
	c.m[f.UserID] = factsEntry{f: f, until: now.Add(c.ttl).UnixNano()}
}

// forget drops what is kept of users.
func (c *factsCache) forget(users ...int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for _, u := range users {
		delete(c.m, u)
	}
}

// forgetAll drops everything kept.
func (c *factsCache) forgetAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.m)
}
