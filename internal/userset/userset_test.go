package userset

import (
	"math/rand/v2"
	"testing"
)

func TestSet(t *testing.T) {
	s := New(4)
	seen := map[int64]bool{}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		id := 1 + r.Int64N(50_000) // many repeats
		if got := s.Add(id); got == seen[id] {
			t.Fatalf("Add(%d) = %v after seen=%v", id, got, seen[id])
		}
		seen[id] = true
	}
	if s.Len() != len(seen) {
		t.Fatalf("set holds %d, want %d", s.Len(), len(seen))
	}
}
