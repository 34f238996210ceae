package quantest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/quanhq/quan"
)

func testAdjustStock(t *testing.T, s quan.TemplateStore) {
	tpl := create(t, s, newTemplate(t, 1, "stock")) // stock 100
	for _, c := range []struct{ delta, want int64 }{
		{+20, 120}, {-1, 119}, {-19, 100}, {0, 100}, {-100, 0}, {+3, 3},
	} {
		left, err := s.AdjustStock(t.Context(), tpl.ID, c.delta)
		if err != nil || left != c.want {
			t.Fatalf("AdjustStock(%+d) = %d, %v; want %d, nil", c.delta, left, err, c.want)
		}
		if got := get(t, s, tpl.ID).Stock; got != c.want {
			t.Fatalf("after AdjustStock(%+d) the stored stock is %d, want %d", c.delta, got, c.want)
		}
	}
}

func testAdjustOutOfStock(t *testing.T, s quan.TemplateStore) {
	tpl := newTemplate(t, 1, "scarce")
	tpl.Stock, tpl.TotalStock = 2, 2
	create(t, s, tpl)
	want := get(t, s, tpl.ID)

	for _, delta := range []int64{-3, -1000} {
		if _, err := s.AdjustStock(t.Context(), tpl.ID, delta); !errors.Is(err, quan.ErrOutOfStock) {
			t.Fatalf("AdjustStock(%d) with stock 2: error %v, want ErrOutOfStock", delta, err)
		}
		assertTemplate(t, get(t, s, tpl.ID), want)
	}
	// The last coupons can be taken; then the stock is out.
	if left, err := s.AdjustStock(t.Context(), tpl.ID, -2); err != nil || left != 0 {
		t.Fatalf("AdjustStock(-2) with stock 2 = %d, %v; want 0, nil", left, err)
	}
	if _, err := s.AdjustStock(t.Context(), tpl.ID, -1); !errors.Is(err, quan.ErrOutOfStock) {
		t.Fatalf("AdjustStock(-1) with stock 0: error %v, want ErrOutOfStock", err)
	}
	if got := get(t, s, tpl.ID).Stock; got != 0 {
		t.Fatalf("stock is %d, want 0", got)
	}
}

func testAdjustMissing(t *testing.T, s quan.TemplateStore) {
	create(t, s, newTemplate(t, 1, "present"))
	for _, delta := range []int64{-1, +1} {
		if _, err := s.AdjustStock(t.Context(), 999_999, delta); !errors.Is(err, quan.ErrNotFound) {
			t.Errorf("AdjustStock(999999, %+d) error = %v, want ErrNotFound", delta, err)
		}
	}
}

func testAdjustNoAudit(t *testing.T, s quan.TemplateStore) {
	tpl := create(t, s, newTemplate(t, 1, "issuing"))
	for _, delta := range []int64{-5, +2} {
		if _, err := s.AdjustStock(t.Context(), tpl.ID, delta); err != nil {
			t.Fatal(err)
		}
	}
	if es := history(t, s, tpl.ID); len(es) != 1 {
		t.Errorf("got %d audit entries, want 1 (the create): AdjustStock writes none", len(es))
	}
}

// firstErrors keeps the first few unexpected errors of many goroutines, so
// that a broken store fails with a readable report.
type firstErrors struct {
	mu   sync.Mutex
	errs []error
	n    int
}

func (f *firstErrors) add(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if len(f.errs) < 5 {
		f.errs = append(f.errs, err)
	}
}

func (f *firstErrors) report(t *testing.T) {
	t.Helper()
	for _, err := range f.errs {
		t.Error(err)
	}
	if f.n > len(f.errs) {
		t.Errorf("... and %d more errors", f.n-len(f.errs))
	}
}

// testStampede releases many more takers than there is stock at once:
// exactly stock of them get a coupon, and the stock never goes below zero.
func testStampede(t *testing.T, s quan.TemplateStore) {
	const stock, takers = 1000, 4000
	tpl := newTemplate(t, 1, "stampede")
	tpl.Stock, tpl.TotalStock = stock, stock
	create(t, s, tpl)

	var (
		start    = make(chan struct{})
		wg       sync.WaitGroup
		out      atomic.Int64
		mu       sync.Mutex
		left     = map[int64]int{} // stock left, as each successful take saw it
		failures firstErrors
	)
	for range takers {
		wg.Go(func() {
			<-start
			n, err := s.AdjustStock(t.Context(), tpl.ID, -1)
			switch {
			case err == nil:
				mu.Lock()
				left[n]++
				mu.Unlock()
			case errors.Is(err, quan.ErrOutOfStock):
				out.Add(1)
			default:
				failures.add(err)
			}
		})
	}
	close(start)
	wg.Wait()
	failures.report(t)

	taken := 0
	for n, times := range left {
		taken += times
		// Takes are serialised: each one leaves a different stock.
		if n < 0 || n >= stock || times != 1 {
			t.Errorf("%d takes left stock %d; want each of 0 … %d once", times, n, stock-1)
		}
	}
	if taken != stock || out.Load() != takers-stock {
		t.Errorf("%d takes succeeded and %d were out of stock; want %d and %d", taken, out.Load(), stock, takers-stock)
	}
	if got := get(t, s, tpl.ID).Stock; got != 0 {
		t.Errorf("final stock %d, want 0", got)
	}
}

// testStampedeMixed races takes, returns (AdjustStock +1) and merchant
// stock increases (UpdateTemplate) on one template: whatever the order, the
// stock adds up.
func testStampedeMixed(t *testing.T, s quan.TemplateStore) {
	const (
		stock     = 500
		takes     = 1500
		gives     = 500
		increases = 50
	)
	tpl := newTemplate(t, 1, "mixed stampede")
	tpl.Stock, tpl.TotalStock = stock, stock
	create(t, s, tpl)

	var (
		start    = make(chan struct{})
		wg       sync.WaitGroup
		taken    atomic.Int64
		failures firstErrors
	)
	adjust := func(delta int64) {
		<-start
		n, err := s.AdjustStock(t.Context(), tpl.ID, delta)
		switch {
		case err == nil && n >= 0:
			if delta < 0 {
				taken.Add(1)
			}
		case err == nil:
			failures.add(fmt.Errorf("AdjustStock(%+d) left stock %d", delta, n))
		case delta < 0 && errors.Is(err, quan.ErrOutOfStock):
		default:
			failures.add(fmt.Errorf("AdjustStock(%+d): %w", delta, err))
		}
	}
	for i := range takes + gives + increases {
		switch {
		case i%4 == 0 && i/4 < gives:
			wg.Go(func() { adjust(+1) })
		case i%40 == 1 && i/40 < increases:
			wg.Go(func() {
				<-start
				if _, err := s.UpdateTemplate(t.Context(), 1, tpl.ID, "merchant:1", quan.ActionStock,
					func(t *quan.Template) error { return t.IncreaseStock(1) }); err != nil {
					failures.add(fmt.Errorf("UpdateTemplate(IncreaseStock(1)): %w", err))
				}
			})
		default:
			wg.Go(func() { adjust(-1) })
		}
	}
	close(start)
	wg.Wait()
	failures.report(t)

	got := get(t, s, tpl.ID)
	if want := stock + gives + increases - taken.Load(); got.Stock != want {
		t.Errorf("final stock %d, want %d = %d + %d returned + %d increased - %d taken",
			got.Stock, want, stock, gives, increases, taken.Load())
	}
	if es := history(t, s, tpl.ID); len(es) != 1+increases {
		t.Errorf("got %d audit entries, want %d: the create and one per increase", len(es), 1+increases)
	}
}

// testConcurrentUpdates runs many read-modify-write closures on one
// template at once: UpdateTemplate must serialise them, so none is lost.
func testConcurrentUpdates(t *testing.T, s quan.TemplateStore) {
	const n = 50
	tpl := create(t, s, newTemplate(t, 1, "concurrent")) // stock 100
	var (
		start    = make(chan struct{})
		wg       sync.WaitGroup
		failures firstErrors
	)
	for range n {
		wg.Go(func() {
			<-start
			if _, err := s.UpdateTemplate(t.Context(), 1, tpl.ID, "merchant:1", quan.ActionStock,
				func(t *quan.Template) error { return t.IncreaseStock(1) }); err != nil {
				failures.add(err)
			}
		})
	}
	close(start)
	wg.Wait()
	failures.report(t)

	got := get(t, s, tpl.ID)
	if got.Stock != tpl.Stock+n || got.TotalStock != tpl.TotalStock+n {
		t.Errorf("stock %d, total %d; want %d, %d", got.Stock, got.TotalStock, tpl.Stock+n, tpl.TotalStock+n)
	}
	if es := history(t, s, tpl.ID); len(es) != 1+n {
		t.Errorf("got %d audit entries, want %d", len(es), 1+n)
	}
}
