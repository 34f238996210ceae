package quantest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quanhq/quan"
)

// CacheThroughput measures Reserve on c for about d: goroutines callers,
// each reserving batches of batch distinct new users under fresh keys, on
// template tpl, which it primes with the largest stock and limit. It
// returns Reserve calls per second and users per second. It asserts
// nothing about speed: adapters print the figures.
func CacheThroughput(ctx context.Context, c quan.Cache, tpl int64, goroutines, batch int, d time.Duration) (calls, users float64, err error) {
	st := cacheState(tpl, quan.MaxStock, quan.MaxPerUserLimit)
	if err := c.Prime(ctx, st, Holdings(nil)); err != nil {
		return 0, 0, err
	}
	var (
		next     atomic.Int64
		n        atomic.Int64
		once     sync.Once
		firstErr error
		wg       sync.WaitGroup
	)
	deadline := time.Now().Add(d)
	began := time.Now()
	for range goroutines {
		wg.Go(func() {
			us := make([]int64, batch)
			for time.Now().Before(deadline) {
				first := next.Add(int64(batch)) - int64(batch)
				for i := range us {
					us[i] = first + int64(i)
				}
				out, err := c.Reserve(ctx, tpl, fmt.Sprintf("bench-%d", first), us, base)
				if err == nil && len(out) != batch {
					err = fmt.Errorf("%d outcomes for %d users", len(out), batch)
				}
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	secs := time.Since(began).Seconds()
	return float64(n.Load()) / secs, float64(n.Load()) * float64(batch) / secs, firstErr
}
