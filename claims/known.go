package claims

import (
	"context"
	"sync"
	"time"

	"github.com/quanhq/quan"
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

func (k *knownIDs) exists(ctx context.Context, store quan.TemplateStore, id int64) (bool, error) {
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
	ts, _, err := store.Templates(ctx, quan.TemplateFilter{ShopNo: quan.AnyShop, Limit: 1})
	if err != nil {
		return false, err
	}
	if len(ts) > 0 {
		k.highest = ts[0].ID
	}
	return id <= k.highest, nil
}
