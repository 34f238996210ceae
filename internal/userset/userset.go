// Package userset holds a set of positive user ids in an open-addressing
// table: 16 bytes a user at worst, a quarter of a Go map's, which matters
// for files of millions of users.
package userset

// Set is a set of positive user ids.
type Set struct {
	slots []int64 // 0 marks a free slot; ids are positive
	n     int
}

// New returns an empty set sized for capacity ids (it grows past them).
func New(capacity int) *Set {
	size := 1
	for size < capacity*2 {
		size <<= 1
	}
	return &Set{slots: make([]int64, size)}
}

// Len returns how many ids s holds.
func (s *Set) Len() int { return s.n }

// Add inserts id, which must be positive, and reports whether it was new.
func (s *Set) Add(id int64) bool {
	if (s.n+1)*2 > len(s.slots) {
		s.grow()
	}
	mask := uint64(len(s.slots) - 1)
	for i := mix(uint64(id)) & mask; ; i = (i + 1) & mask {
		switch s.slots[i] {
		case id:
			return false
		case 0:
			s.slots[i] = id
			s.n++
			return true
		}
	}
}

func (s *Set) grow() {
	old := s.slots
	s.slots = make([]int64, len(old)*2)
	s.n = 0
	for _, id := range old {
		if id != 0 {
			s.Add(id)
		}
	}
}

// mix is the splitmix64 finalizer: ids that share their high digits
// still spread over the table.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
