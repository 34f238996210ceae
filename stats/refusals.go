package stats

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/quanhq/quan"
)

// DefaultRefusalFlush is how often a RefusalCounter writes its counts.
const DefaultRefusalFlush = 5 * time.Second

// RefusalCounter counts the claims a claims.Service refuses before the store
// (sold out, over the limit, a rate limit …), by template and code, in
// memory, and adds them to the store's statistics every Every and when Run
// ends. The claim path pays a map update under a mutex, never a write.
//
// The contract: a refusal is counted at most once, in the statistics of
// its template, within about Every of the answer. A process killed
// (SIGKILL, a crash) loses the counts of its last Every at most; a flush
// that fails keeps its counts for the next one. A template that does not
// exist has no statistics: its refusals are dropped by the store.
type RefusalCounter struct {
	Store  quan.StatsStore
	Every  time.Duration // 0 means DefaultRefusalFlush
	Logger *slog.Logger

	mu sync.Mutex
	m  map[refusalKey]int64
}

type refusalKey struct {
	template int64
	code     string
}

// Add counts one claim of template refused with code. It is safe on a nil
// counter, which counts nothing.
func (c *RefusalCounter) Add(template int64, code string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[refusalKey]int64{}
	}
	c.m[refusalKey{template, code}]++
	c.mu.Unlock()
}

// Flush adds the counts so far to the store, in template and code order.
// If the store fails, they are kept for the next flush.
func (c *RefusalCounter) Flush(ctx context.Context) error {
	c.mu.Lock()
	m := c.m
	c.m = nil
	c.mu.Unlock()
	if len(m) == 0 {
		return nil
	}
	counts := make([]quan.RefusalCount, 0, len(m))
	for k, n := range m {
		counts = append(counts, quan.RefusalCount{TemplateID: k.template, Code: k.code, N: n})
	}
	slices.SortFunc(counts, func(a, b quan.RefusalCount) int {
		return cmp.Or(cmp.Compare(a.TemplateID, b.TemplateID), cmp.Compare(a.Code, b.Code))
	})
	if err := c.Store.AddRefusals(ctx, counts); err != nil {
		c.mu.Lock()
		if c.m == nil {
			c.m = map[refusalKey]int64{}
		}
		for k, n := range m {
			c.m[k] += n
		}
		c.mu.Unlock()
		return err
	}
	return nil
}

// Run flushes every Every until ctx ends, then once more, within 5 s.
func (c *RefusalCounter) Run(ctx context.Context) error {
	every := c.Every
	if every <= 0 {
		every = DefaultRefusalFlush
	}
	logger := c.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			last, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := c.Flush(last); err != nil {
				logger.Warn("the last claim refusal counts are lost", "err", err)
			}
			return nil
		case <-tick.C:
			if err := c.Flush(ctx); err != nil && ctx.Err() == nil {
				logger.Warn("write claim refusal counts; kept for the next try", "err", err)
			}
		}
	}
}
