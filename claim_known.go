package quan

import (
	"context"
	"sync"
	"time"
)

// knownIDs tells template ids that may exist from ids that cannot: ids
// are handed out in order and templates never deleted, so every id up to
// the highest exists. The highest is read from the store at most once a
// second, so a flood of unknown ids costs the store nothing.
type knownIDs struct {
	mu      sync.Mutex
	highest int64
	checked time.Time
}

func (k *knownIDs) exists(ctx context.Context, store TemplateStore, id int64) (bool, error) {
	if id <= 0 {
		return false, nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if id <= k.highest {
		return true, nil
	}
	if time.Since(k.checked) < time.Second {
		return false, nil
	}
	k.checked = time.Now()
	ts, _, err := store.Templates(ctx, TemplateFilter{ShopNo: AnyShop, Limit: 1})
	if err != nil {
		return false, err
	}
	if len(ts) > 0 {
		k.highest = ts[0].ID
	}
	return id <= k.highest, nil
}

// flight runs one call per key at a time; callers arriving meanwhile wait
// for it and share its error.
type flight struct {
	mu    sync.Mutex
	calls map[int64]*flightCall
}

type flightCall struct {
	done chan struct{}
	err  error
}

func (f *flight) do(key int64, fn func() error) error {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[int64]*flightCall{}
	}
	if c, ok := f.calls[key]; ok {
		f.mu.Unlock()
		<-c.done
		return c.err
	}
	c := &flightCall{done: make(chan struct{})}
	f.calls[key] = c
	f.mu.Unlock()
	c.err = fn()
	f.mu.Lock()
	delete(f.calls, key)
	f.mu.Unlock()
	close(c.done)
	return c.err
}
