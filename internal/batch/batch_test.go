package batch

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// TestBatcherDoMany: the items of one call come back in order, split over
// batches when they exceed one, and an error of any batch is the call's.
func TestBatcherDoMany(t *testing.T) {
	var sizes []int
	fail := false
	b := New(4, func(_ context.Context, ins []int) ([]int, error) {
		sizes = append(sizes, len(ins))
		if fail && len(sizes) == 2 {
			return nil, errors.New("second batch failed")
		}
		outs := make([]int, len(ins))
		for i, in := range ins {
			outs[i] = 10 * in
		}
		return outs, nil
	})
	outs, err := b.DoMany(t.Context(), []int{1, 2, 3, 4, 5, 6})
	if err != nil || !slices.Equal(outs, []int{10, 20, 30, 40, 50, 60}) || !slices.Equal(sizes, []int{4, 2}) {
		t.Fatalf("DoMany gave %v, %v in batches %v; want the items times ten in batches of 4 and 2", outs, err, sizes)
	}
	sizes, fail = nil, true
	if outs, err := b.DoMany(t.Context(), []int{1, 2, 3, 4, 5}); err == nil || outs != nil {
		t.Fatalf("DoMany with a failed batch gave %v, %v; want its error", outs, err)
	}
	if outs, err := b.DoMany(t.Context(), nil); err != nil || len(outs) != 0 {
		t.Fatalf("DoMany of nothing gave %v, %v", outs, err)
	}
}
