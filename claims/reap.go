package claims

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quanhq/quan"
)

// HandoffTimeout bounds one hand-off of claims to the bus. With the time
// a claim can wait for the hand-off before its own (one more), it bounds
// how long a live process holds a reservation it has not handed off.
const HandoffTimeout = 5 * time.Second

// DefaultReapAfter is how long a claim may stay reserved and not handed
// off before Service.Reap takes it as abandoned: well above the two
// HandoffTimeouts a live process can take, so that only the claims of a
// process that stopped (or stalled for that long, which then answers 503
// rather than 202) are reaped.
const DefaultReapAfter = 20 * time.Second

// maxReap bounds the claims of a template one Reap takes.
const maxReap = 1000

// Reap gives back the reservations of claims that were reserved over
// ReapAfter ago (DefaultReapAfter if 0) and never handed to the bus: their
// process stopped between the reservation and the hand-off. For each it
// first records the claim failed in the store (quan.ReasonAbandoned), which
// fences it: a hand-off that still reaches the bus later finds it decided
// and issues nothing. Only a claim the store holds as failed has its
// reservation given back; one the store issued (its hand-off reached the
// bus after all) keeps it. It returns how many claims it reaped. A cache
// without a Ledger has nothing to reap.
func (s *Service) Reap(ctx context.Context) (int, error) {
	ledger := s.Ledger
	if ledger == nil {
		return 0, nil
	}
	after := s.ReapAfter
	if after <= 0 {
		after = DefaultReapAfter
	}
	entries, err := ledger.Abandoned(ctx, s.Now.UTC().Add(-after), maxReap)
	if err != nil {
		return 0, fmt.Errorf("reap claims: %w", err)
	}
	n := 0
	var errs []error
	for _, e := range entries {
		if err := s.reapOne(ctx, ledger, e); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	if n > 0 {
		s.logger().Warn("claims abandoned by a stopped process: reservations given back", "claims", n)
	}
	return n, errors.Join(errs...)
}

// reapOne fences, settles and forgets one abandoned claim. Each step is
// idempotent, so a reaper that stops half-way is finished by the next.
func (s *Service) reapOne(ctx context.Context, ledger quan.ClaimLedger, e quan.LedgerEntry) error {
	template, user, err := quan.ParseClaimID(e.Key)
	if err != nil || template != e.Template {
		s.logger().Error("claim ledger entry that is not a claim", "template", e.Template, "key", e.Key)
		return ledger.Reaped(ctx, e.Template, e.Key)
	}
	c := &quan.Claim{ID: e.Key, TemplateID: template, UserID: user, Status: quan.ClaimPending, At: e.At}
	rec, err := s.Claims.FailClaim(ctx, c, quan.ReasonAbandoned, s.Now.UTC())
	if err != nil {
		return fmt.Errorf("reap claim %s: %w", e.Key, err)
	}
	if rec.Status != quan.ClaimIssued {
		if err := s.Cache.Release(ctx, template, e.Key); err != nil {
			return fmt.Errorf("reap claim %s: give back its reservation: %w", e.Key, err)
		}
		if err := s.giveShopCapOf(ctx, c); err != nil {
			return fmt.Errorf("reap claim %s: %w", e.Key, err)
		}
		s.Counters.Reaped.Add(1)
	}
	if err := ledger.Reaped(ctx, template, e.Key); err != nil {
		return fmt.Errorf("reap claim %s: %w", e.Key, err)
	}
	return nil
}

// ServeReaper reaps abandoned claims every interval until ctx ends.
func (s *Service) ServeReaper(ctx context.Context, interval time.Duration) error {
	if s.Ledger == nil || interval <= 0 {
		return nil
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if _, err := s.Reap(ctx); err != nil && ctx.Err() == nil {
			s.logger().Warn("reap abandoned claims", "err", err)
		}
	}
}
