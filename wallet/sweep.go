package wallet

import (
	"context"
	"time"

	"github.com/quanhq/quan"
)

// Sweep writes down what time did to coupons, in batches of up to batch:
// available coupons whose window closed expire, locks that ran out are
// released. It returns how many coupons it changed.
func (s *Service) Sweep(ctx context.Context, batch int) (_ int, err error) {
	defer func() {
		if err != nil && ctx.Err() == nil {
			s.Counters.Count(quan.CouponAvailable, quan.CouponExpired, quan.TransitionError, 1)
		}
	}()
	now := s.Now.UTC()
	n := 0
	for {
		cs, was, err := s.Coupons.LapseCoupons(ctx, now, batch)
		if err != nil {
			return n, err
		}
		n += len(cs)
		for i, c := range cs {
			s.Counters.Count(was[i], c.Status, quan.TransitionOK, 1)
			if was[i] == quan.CouponLocked {
				s.Counters.LocksExpired.Add(1)
			}
		}
		if len(cs) < batch {
			return n, nil
		}
	}
}

// Archive moves the used, expired and revoked coupons of ended templates
// last changed over after ago into the history table, in batches, and
// returns how many; nothing when the store cannot archive.
func (s *Service) Archive(ctx context.Context, after time.Duration, batch int) (int, error) {
	a := s.Archiver
	if a == nil || after <= 0 {
		return 0, nil
	}
	now := s.Now.UTC()
	n := 0
	for {
		k, err := a.ArchiveCoupons(ctx, now.Add(-after), now, batch)
		n += k
		if err != nil || k < batch {
			return n, err
		}
	}
}
